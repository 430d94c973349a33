//! `--hosts FILE`: the one place where a file's kind is decided. A TOML file with a
//! `[kubernetes]` table describes a Kubernetes fleet (pods iofleet creates), one with a
//! `[vms]` table a fleet of worker VMs (guests iofleet creates through libvirt); any other
//! file is an inventory of hosts (iofleet's TOML, or an Ansible inventory). The file is
//! read once, by the reader the caller hands (a command reads each input once).

use std::path::Path;

use crate::inventory::{self, HostSpec, InventoryError, Reader};
use crate::kube::{self, KubeFleet};

/// What a `--hosts` file names.
#[derive(Debug, Clone)]
pub enum HostsFile {
    /// Hosts that exist: agents are started on them over their transport.
    Inventory(Vec<HostSpec>),
    /// A Kubernetes fleet's description: its pods are the hosts.
    Kubernetes(Box<KubeFleet>),
    /// A fleet of worker VMs' description: the VMs iofleet creates are the hosts.
    Vms(Box<crate::vms::VmFleet>),
}

/// Read `path` (its text through `read`) and decide what it names.
pub fn read(
    path: &Path,
    read: &dyn Fn(&Path) -> std::io::Result<String>,
) -> Result<HostsFile, InventoryError> {
    let fail = |message: String| InventoryError::File {
        file: path.to_path_buf(),
        line: None,
        message,
    };
    if path.extension().is_some_and(|e| e == "toml") {
        let text = read(path).map_err(|e| fail(e.to_string()))?;
        if crate::vms::describes_vms(&text) {
            return crate::vms::parse(&text)
                .map(|f| HostsFile::Vms(Box::new(f)))
                .map_err(fail);
        }
        if inventory::describes_kubernetes(&text) {
            return kube::parse(&text)
                .map(|f| HostsFile::Kubernetes(Box::new(f)))
                .map_err(fail);
        }
        // Read once: the inventory reader gets the same text.
        let once = std::cell::Cell::new(Some(text));
        let again = |p: &Path| match once.take() {
            Some(t) => Ok(t),
            None => read(p),
        };
        return inventory::load_from(path, Reader::from_env()?, &again).map(HostsFile::Inventory);
    }
    inventory::load_from(path, Reader::from_env()?, read).map(HostsFile::Inventory)
}
