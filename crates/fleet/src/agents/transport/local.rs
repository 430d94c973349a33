//! The `local` transport: the agent is a child process of the controller on this
//! machine. It exercises the whole agent path (protocol, clocks, liveness) without a
//! network, and lets several agents share one machine in tests and benchmarks.

use std::process::Command;

use super::Transport;

pub struct LocalTransport;

impl Transport for LocalTransport {
    fn kind(&self) -> &'static str {
        "local"
    }
    fn shell(&self, script: &str) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script);
        c
    }
    fn shares_binary(&self) -> bool {
        true
    }
}
