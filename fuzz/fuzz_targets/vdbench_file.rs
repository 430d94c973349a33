//! A vdbench parameter file as `iofleet run FILE.vdb` reads it: parsed, mapped into
//! steps, each step's profile resolved, every refusal and plan checked
//! (`iofleet_fuzz::vdbench_file`).

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    iofleet_fuzz::vdbench_file(&iofleet_fuzz::text(data));
});
