//! How the controller reaches a host's agent. A transport only knows how to run a
//! POSIX shell script on the host with stdin, stdout and stderr piped back; everything
//! else — provisioning the binary, starting `iofleet agent` (with `exec`, so the agent
//! is the process the transport runs), ending a frozen agent through a second
//! connection, removing copies — is built on that one call (`agents::session`, with the
//! scripts of `agents::scripts`), the same for every transport.
//!
//! Implementations: `local` (a child process of this controller, `sh -c`), `ssh` (the
//! system OpenSSH client in batch mode), `kubectl` (`kubectl exec -i POD -- sh -c
//! SCRIPT` into a Kubernetes fleet's pods).

mod kubectl;
mod local;
mod ssh;

use std::process::Command;

pub use kubectl::{kubectl, KubectlTransport};
pub use local::LocalTransport;
pub use ssh::SshTransport;

use crate::error::FleetError;
use crate::host::{HostSpec, Reach};

pub trait Transport: Send + Sync {
    /// How this transport is named in inventories and messages.
    fn kind(&self) -> &'static str;
    /// A command that runs `script` in a POSIX shell on the host. The caller pipes and
    /// spawns it.
    fn shell(&self, script: &str) -> Command;
    /// The host runs this controller's own binary at its own path (nothing is copied).
    fn shares_binary(&self) -> bool;
}

/// The transport that reaches `host`; none reaches an agent that joined (it came to
/// the controller, over the join port).
pub fn for_host(host: &HostSpec) -> Result<Box<dyn Transport>, FleetError> {
    Ok(match &host.reach {
        Reach::Local => Box::new(LocalTransport),
        Reach::Ssh { options } => Box::new(SshTransport {
            destination: host.destination.clone(),
            options: options.clone(),
        }),
        Reach::Kubectl(address) => Box::new(KubectlTransport {
            pod: host.destination.clone(),
            address: address.clone(),
        }),
        Reach::Joined { rank, .. } => {
            return Err(FleetError::Setup(format!(
                "host {} (rank {rank}) joined the command's port: no transport reaches it",
                host.name
            )))
        }
    })
}

/// Quote a word for a POSIX shell.
pub fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_a_real_shell() {
        for word in ["plain", "with space", "it's", "$HOME `x` \"y\"", ""] {
            let out = LocalTransport
                .shell(&format!("printf %s {}", shell_quote(word)))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout), word);
        }
    }
}
