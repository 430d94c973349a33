//! Profile TOML as `iofleet run PROFILE.toml` reads it: parsed, resolved with no
//! override (direct and buffered), every error and plan checked (`iofleet_fuzz::profile`).

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    iofleet_fuzz::profile(&iofleet_fuzz::text(data));
});
