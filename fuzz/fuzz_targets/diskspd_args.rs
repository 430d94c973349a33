//! A DISKSPD command line as `iofleet run --diskspd "ARGS"` reads it: split, mapped to
//! one worker's profile, the profile resolved, every refusal and plan checked
//! (`iofleet_fuzz::diskspd_args`).

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    iofleet_fuzz::diskspd_args(&iofleet_fuzz::text(data));
});
