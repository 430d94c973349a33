//! The `ssh` transport: the system OpenSSH client in batch mode, so `~/.ssh/config`,
//! ssh-agent, ProxyJump and known_hosts all apply, and no port is opened on the host.
//! Keep-alives make a partitioned host's session end instead of hanging; the agent's own
//! heartbeats let the controller notice a frozen host long before that.

use std::process::Command;

use super::Transport;

pub struct SshTransport {
    pub destination: String,
    /// Extra arguments for `ssh` (inventory-wide options, then per-host ones).
    pub options: Vec<String>,
}

impl Transport for SshTransport {
    fn kind(&self) -> &'static str {
        "ssh"
    }
    fn shell(&self, script: &str) -> Command {
        let mut c = Command::new("ssh");
        c.args(&self.options).args([
            "-o",
            "BatchMode=yes",
            "-o",
            "ConnectTimeout=15",
            "-o",
            "ServerAliveInterval=5",
            "-o",
            "ServerAliveCountMax=3",
            "-T",
            "--",
            &self.destination,
            script,
        ]);
        c
    }
    fn shares_binary(&self) -> bool {
        false
    }
}
