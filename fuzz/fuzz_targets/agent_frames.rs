//! The agent protocol's frames as the controller reads them from a host
//! (`iofleet_fuzz::agent_frames`).

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    iofleet_fuzz::agent_frames(data);
});
