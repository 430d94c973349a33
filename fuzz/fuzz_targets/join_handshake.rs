//! What a joining agent sends first, as the join port reads it
//! (`iofleet_fuzz::join_handshake`).

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    iofleet_fuzz::join_handshake(data);
});
