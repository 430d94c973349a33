//! A fio job file as `iofleet run JOB.fio` reads it: parsed, mapped into worker groups,
//! each group's profile resolved, every error and plan checked (`iofleet_fuzz::fio_job`).
//! Includes resolve among texts carried in the input, never the host's files.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    iofleet_fuzz::fio_job(&iofleet_fuzz::text(data));
});
