//! An Iometer configuration file as `iofleet run FILE.icf` reads it: parsed, mapped into
//! steps, each step's profile resolved, every refusal and plan checked
//! (`iofleet_fuzz::iometer_file`).

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    iofleet_fuzz::iometer_file(&iofleet_fuzz::text(data));
});
