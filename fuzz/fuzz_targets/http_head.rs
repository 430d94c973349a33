//! The HTTP request head as `iofleet serve` and `--metrics-listen` read it
//! (`iofleet_fuzz::http_head`).

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    iofleet_fuzz::http_head(data);
});
