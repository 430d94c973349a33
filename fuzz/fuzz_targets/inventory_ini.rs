//! An Ansible INI inventory as `--hosts FILE` reads it with the native reader: parsed,
//! variables resolved, checked, workers placed (`iofleet_fuzz::inventory`).

#![no_main]

use iofleet_fleet::inventory::TextFormat;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    iofleet_fuzz::inventory(&iofleet_fuzz::text(data), TextFormat::Ini);
});
