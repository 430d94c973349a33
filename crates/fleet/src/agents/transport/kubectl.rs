//! The `kubectl` transport: `kubectl exec -i POD -c CONTAINER -- sh -c SCRIPT` with the
//! user's own kubectl and kubeconfig (as `ssh` is the user's own ssh), for the pods a
//! Kubernetes fleet creates (`crate::kube`). Each session is one `kubectl exec` process
//! on the controller; docs/kubernetes.md gives what one costs.

use std::process::Command;

use super::Transport;
use crate::host::PodAddress;

pub struct KubectlTransport {
    pub pod: String,
    pub address: PodAddress,
}

/// `kubectl` with the fleet's context and namespace, for every call iofleet makes.
pub fn kubectl(address: &PodAddress) -> Command {
    let mut c = Command::new("kubectl");
    if let Some(ctx) = &address.context {
        c.args(["--context", ctx]);
    }
    c.args(["--namespace", &address.namespace]);
    c
}

impl Transport for KubectlTransport {
    fn kind(&self) -> &'static str {
        "kubectl"
    }
    fn shell(&self, script: &str) -> Command {
        let mut c = kubectl(&self.address);
        c.args([
            "exec",
            "-i",
            &self.pod,
            "-c",
            &self.address.container,
            "--",
            "sh",
            "-c",
            script,
        ]);
        c
    }
    fn shares_binary(&self) -> bool {
        false
    }
}
