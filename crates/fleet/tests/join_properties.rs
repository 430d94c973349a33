//! Property tests of what the join port reads from a connection before it is a host
//! (`join::server::candidate_join`) and of the port's frame reader (`take_frame`): a
//! join generated from structured values is read back whole however its bytes are
//! chunked, and only once all of them are in; any bytes are answered the same whole or
//! chunked, refused as malformed or oversized when refused; the port's reader and the
//! sessions' stream reader agree on every input. The fuzz target `join_handshake`
//! (fuzz/, bench/README.md) goes further in time; these run in the suite with a modest
//! case count.

use iofleet_fleet::agents::join::server::candidate_join;
use iofleet_fleet::agents::protocol::{
    frame_bytes, read_frame, take_frame, Frame, FrameLimits, Hello, Join, RelayListen, TargetArg,
    MAGIC,
};
use proptest::prelude::*;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 128,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn a_join() -> impl Strategy<Value = Join> {
    (
        any::<u32>(),
        "[ -~]{0,40}",
        "[a-z0-9.-]{1,64}",
        any::<u32>(),
        proptest::option::of(any::<u32>()),
        proptest::option::of(any::<u32>()),
        "[A-Z_]{0,24}",
        proptest::option::of(proptest::collection::vec("/[a-z0-9/]{1,30}", 1..4)),
        "[0-9a-f]{64}",
        proptest::option::of((any::<u16>(), "[0-9a-f]{64}")),
    )
        .prop_map(
            |(protocol, version, hostname, pid, rank, size, rank_from, target, token, relay)| {
                Join {
                    hello: Hello {
                        protocol,
                        version,
                        hostname,
                        pid,
                    },
                    rank,
                    size,
                    rank_from,
                    target: target.and_then(TargetArg::from_paths),
                    token,
                    relay: relay.map(|(port, fingerprint)| RelayListen { port, fingerprint }),
                }
            },
        )
}

/// `bytes` fed `step` bytes at a time: the first answer that is not "incomplete".
fn fed(bytes: &[u8], step: usize) -> Result<Option<(Join, usize)>, String> {
    let mut n = 0;
    loop {
        n = (n + step.max(1)).min(bytes.len());
        match candidate_join(&bytes[..n]) {
            Ok(None) if n < bytes.len() => continue,
            other => return other,
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_join_reads_back_whole_however_it_arrives(join in a_join(), step in 1usize..64, tail in proptest::collection::vec(any::<u8>(), 0..16)) {
        let mut bytes = MAGIC.to_vec();
        bytes.extend(frame_bytes(&Frame::Join(Box::new(join.clone()))));
        let len = bytes.len();
        // Every strict prefix is incomplete, never refused.
        for cut in 0..len {
            prop_assert_eq!(candidate_join(&bytes[..cut]), Ok(None), "cut at {}", cut);
        }
        // What follows the join (the agent's next frames) is not taken with it.
        bytes.extend(&tail);
        let whole = candidate_join(&bytes);
        prop_assert_eq!(whole.clone(), Ok(Some((join, len))));
        prop_assert_eq!(fed(&bytes, step), whole);
    }

    #[test]
    fn any_bytes_get_the_same_answer_whole_or_chunked(bytes in proptest::collection::vec(any::<u8>(), 0..300), magic in any::<bool>(), step in 1usize..32) {
        let mut input = if magic { MAGIC.to_vec() } else { Vec::new() };
        input.extend(bytes);
        let whole = candidate_join(&input);
        if let Err(why) = &whole {
            prop_assert!(why.starts_with("malformed: ") || why.starts_with("oversized: "), "{}", why);
        }
        prop_assert_eq!(fed(&input, step), whole);
    }

    #[test]
    fn the_ports_reader_and_a_sessions_agree(bytes in proptest::collection::vec(any::<u8>(), 0..200), kind in 1u8..16, len in 0u32..300) {
        // A header of a known kind now and then, so that bodies get decoded too.
        let mut input = len.to_le_bytes().to_vec();
        input.push(kind);
        input.extend(bytes);
        for input in [&input[..], &input[5..]] {
            let limits = FrameLimits::greeting();
            let mut r = input;
            let streamed = read_frame(&mut r, &limits);
            match (take_frame(input, || limits), streamed) {
                (Ok(Some((f, used))), Ok(Some(g))) => {
                    prop_assert_eq!(f, g);
                    prop_assert_eq!(used, input.len() - r.len());
                }
                (Ok(None), Ok(None) | Err(_)) | (Err(_), Err(_)) => {}
                (a, b) => prop_assert!(false, "the port read {:?}, a session {:?}", a, b),
            }
        }
    }
}

#[test]
fn a_join_over_its_limit_is_refused_from_its_header() {
    let mut bytes = MAGIC.to_vec();
    bytes.extend(u32::MAX.to_le_bytes());
    bytes.push(13);
    let why = candidate_join(&bytes).unwrap_err();
    assert!(why.starts_with("oversized: a join frame of"), "{why}");
    let mut other = MAGIC.to_vec();
    other.extend(10u32.to_le_bytes());
    other.push(2);
    assert_eq!(
        candidate_join(&other).unwrap_err(),
        "malformed: expected a join frame, not a job frame"
    );
    assert_eq!(
        candidate_join(b"GET / HTTP/1.1\r\n").unwrap_err(),
        "malformed: it does not speak the iofleet protocol"
    );
}

/// Found by the fuzz target `join_handshake`: a frame of length 0 followed by a kind
/// byte was refused as "not a join" when it came whole and as "length 0" when its first
/// four bytes came alone. Now the length is judged first, whole or chunked.
#[test]
fn a_frame_of_length_zero_is_refused_as_such_however_it_arrives() {
    let mut bytes = MAGIC.to_vec();
    bytes.extend([0, 0, 0, 0, 4, 0x31, 0x04, 0]);
    let want = Err("malformed: a frame of length 0 (it must hold at least its kind)".to_string());
    assert_eq!(candidate_join(&bytes), want);
    for step in 1..bytes.len() {
        assert_eq!(fed(&bytes, step), want, "fed {step} at a time");
    }
}
