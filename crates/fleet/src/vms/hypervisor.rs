//! The seam between a VM fleet and what runs its guests: a `Hypervisor` defines a guest,
//! starts it, says where its join channel is, destroys it, and keeps its data disks as
//! volumes. `Virsh` is libvirt's, through its command-line client (`virsh -c URI`), so
//! a remote hypervisor (`qemu+ssh://`) is reached as libvirt reaches it. Another
//! platform (Proxmox's API, vSphere through `govc`, Hyper-V) is another implementation
//! of the same few calls (docs/vms.md says what each would need).
//!
//! Where the hypervisor's files and sockets live is a sibling seam, `HostFiles`: this
//! machine's (`Local`, for `qemu:///…`) or another's over ssh (`remote::Ssh`, for
//! `qemu+ssh://…`); the launcher writes, lists and removes the guests' boot files and
//! connects to their channels through it, never asking which one it has.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub use super::files::{HostFiles, Local};
use super::remote::{Ssh, SshTarget};

/// What a VM fleet needs of a hypervisor. Errors are messages naming the hypervisor
/// and what failed.
pub trait Hypervisor {
    /// The hypervisor as the description names it (for messages).
    fn name(&self) -> &str;
    /// Its machine's files and sockets.
    fn files(&self) -> &dyn HostFiles;
    /// Create a volume in `pool` from its XML (`xml::volume_xml`); its path there.
    fn create_volume(&self, pool: &str, xml: &str) -> Result<String, String>;
    /// Write `file`'s bytes (on the controller) into volume `name` of `pool` from its
    /// start, over the hypervisor's own connection (so a remote one gets them too).
    fn upload_volume(&self, pool: &str, name: &str, file: &Path) -> Result<(), String>;
    /// Delete volume `name` of `pool`.
    fn delete_volume(&self, pool: &str, name: &str) -> Result<(), String>;
    /// The volumes of `pool`.
    fn volumes(&self, pool: &str) -> Result<Vec<String>, String>;
    /// The pool's type as libvirt names it (`dir`, `logical`, `iscsi-direct`, …).
    fn pool_type(&self, pool: &str) -> Result<String, String>;
    /// The capacity of volume `name` of `pool`, in bytes.
    fn volume_size(&self, pool: &str, name: &str) -> Result<u64, String>;
    /// The volumes of `pool` with their capacities in bytes.
    fn volume_sizes(&self, pool: &str) -> Result<Vec<(String, u64)>, String> {
        self.volumes(pool)?
            .into_iter()
            .map(|v| self.volume_size(pool, &v).map(|size| (v, size)))
            .collect()
    }
    /// Whether the hypervisor runs x86-64 guests under KVM (its capabilities list a
    /// `kvm` domain for that architecture), asked of its libvirt, wherever it is.
    fn kvm(&self) -> Result<bool, String>;
    /// Define a domain from its XML (`xml::domain_xml`).
    fn define(&self, xml: &str) -> Result<(), String>;
    fn start(&self, domain: &str) -> Result<(), String>;
    /// Where the running domain's join channel is (its Unix socket on the hypervisor),
    /// read from the live domain: libvirt chooses it.
    fn channel(&self, domain: &str) -> Result<PathBuf, String>;
    /// Power the domain off at once (a no-op for one not running).
    fn destroy(&self, domain: &str) -> Result<(), String>;
    fn undefine(&self, domain: &str) -> Result<(), String>;
    /// Every domain defined, running or not.
    fn domains(&self) -> Result<Vec<String>, String>;
    /// A disk's completed requests as the hypervisor counted them: (reads, writes).
    fn disk_requests(&self, domain: &str, dev: &str) -> Result<(u64, u64), String>;
    /// Every disk's completed requests of the running `domains`, in one call: (domain,
    /// disk) → (reads, writes). A domain not running has none.
    fn block_requests(&self, domains: &[String]) -> Result<RequestCounts, String>;
    /// The domain's state as the hypervisor words it (`running`, `paused`, `shut off`).
    fn state(&self, domain: &str) -> Result<String, String>;
}

/// Requests per (domain, disk): (reads, writes).
pub type RequestCounts = std::collections::BTreeMap<(String, String), (u64, u64)>;

/// `virsh domstats --block`'s text as request counts per (domain, disk).
pub fn parse_domstats(text: &str) -> RequestCounts {
    let mut out = RequestCounts::new();
    let mut domain = String::new();
    let mut names: std::collections::BTreeMap<String, String> = Default::default();
    let mut counts: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    let flush = |domain: &str,
                 names: &mut std::collections::BTreeMap<String, String>,
                 counts: &mut std::collections::BTreeMap<String, (u64, u64)>,
                 out: &mut RequestCounts| {
        for (i, c) in std::mem::take(counts) {
            if let Some(n) = names.get(&i) {
                out.insert((domain.to_string(), n.clone()), c);
            }
        }
        names.clear();
    };
    for line in text.lines() {
        let line = line.trim();
        if let Some(d) = line.strip_prefix("Domain: ") {
            flush(&domain, &mut names, &mut counts, &mut out);
            domain = d.trim_matches(|c| c == '\'' || c == '"').to_string();
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let mut parts = key.splitn(3, '.');
        let (Some("block"), Some(i), Some(field)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        match field {
            "name" => {
                names.insert(i.to_string(), value.to_string());
            }
            "rd.reqs" | "wr.reqs" => {
                let v = value.parse().unwrap_or(0);
                let c = counts.entry(i.to_string()).or_default();
                if field == "rd.reqs" {
                    c.0 = v
                } else {
                    c.1 = v
                }
            }
            _ => {}
        }
    }
    flush(&domain, &mut names, &mut counts, &mut out);
    out
}

/// libvirt through `virsh`, and its machine's files: here, or over ssh for a
/// `qemu+ssh://` URI.
pub struct Virsh {
    pub uri: String,
    files: Box<dyn HostFiles>,
}

impl Virsh {
    /// libvirt at `uri`; an error names `vms.hypervisors` (a `qemu+ssh://` URI ssh
    /// cannot use).
    pub fn new(uri: &str) -> Result<Virsh, String> {
        let files: Box<dyn HostFiles> = match SshTarget::parse(uri) {
            Some(target) => Box::new(Ssh::new(target?)),
            None => Box::new(Local),
        };
        Ok(Virsh {
            uri: uri.to_string(),
            files,
        })
    }

    /// Run `virsh -c URI ARGS` with `input` on its standard input; its output.
    fn run(&self, args: &[&str], input: Option<&str>) -> Result<String, String> {
        let mut c = Command::new("virsh");
        c.args(["-q", "-c", &self.uri])
            .args(args)
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c
            .spawn()
            .map_err(|e| format!("{}: cannot run virsh: {e}", self.uri))?;
        if let Some(text) = input {
            if let Some(mut w) = child.stdin.take() {
                w.write_all(text.as_bytes())
                    .map_err(|e| format!("{}: virsh: {e}", self.uri))?;
            }
        }
        let o = child
            .wait_with_output()
            .map_err(|e| format!("{}: virsh: {e}", self.uri))?;
        if !o.status.success() {
            return Err(format!(
                "{}: virsh {}: {}",
                self.uri,
                args.first().copied().unwrap_or_default(),
                String::from_utf8_lossy(&o.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    }
}

/// Whether libvirt's capabilities XML lists a `kvm` domain for an `x86_64` guest.
pub fn offers_kvm(capabilities: &str) -> bool {
    capabilities.split("<guest>").skip(1).any(|guest| {
        let guest = guest.split("</guest>").next().unwrap_or_default();
        guest.contains("<arch name='x86_64'>") && guest.contains("<domain type='kvm'")
    })
}

/// The words of each non-empty line of virsh's quiet (`-q`) listings.
fn rows(text: &str) -> impl Iterator<Item = Vec<&str>> {
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|w| !w.is_empty())
}

/// The `path` of the `<source>` of the unix channel whose target is `name`, in a live
/// domain's XML.
pub fn channel_path(domain_xml: &str, name: &str) -> Option<PathBuf> {
    let mut rest = domain_xml;
    while let Some(i) = rest.find("<channel type='unix'>") {
        let block = &rest[i..];
        let end = block.find("</channel>")?;
        let block = &block[..end];
        if block.contains(&format!("name='{name}'")) {
            let p = block.split("path='").nth(1)?;
            return Some(PathBuf::from(p.split('\'').next()?));
        }
        rest = &rest[i + end..];
    }
    None
}

/// The type of a pool from its XML (`<pool type='dir'>`).
pub fn pool_type_of(pool_xml: &str) -> Option<String> {
    let head = pool_xml.split("<pool").nth(1)?.split('>').next()?;
    let t = head.split("type=").nth(1)?;
    let q = t.chars().next()?;
    Some(t[1..].split(q).next()?.to_string())
}

/// A volume's capacity in bytes from `virsh vol-info --bytes` (`Capacity: N bytes`).
pub fn capacity_of(vol_info: &str) -> Option<u64> {
    vol_info
        .lines()
        .find_map(|l| l.trim().strip_prefix("Capacity:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

impl Hypervisor for Virsh {
    fn name(&self) -> &str {
        &self.uri
    }

    fn files(&self) -> &dyn HostFiles {
        self.files.as_ref()
    }

    fn kvm(&self) -> Result<bool, String> {
        Ok(offers_kvm(&self.run(&["capabilities"], None)?))
    }

    fn create_volume(&self, pool: &str, xml: &str) -> Result<String, String> {
        self.run(&["vol-create", pool, "/dev/stdin"], Some(xml))?;
        let name = xml
            .split("<name>")
            .nth(1)
            .and_then(|s| s.split("</name>").next())
            .unwrap_or_default();
        Ok(self
            .run(&["vol-path", name, "--pool", pool], None)?
            .trim()
            .to_string())
    }

    fn upload_volume(&self, pool: &str, name: &str, file: &Path) -> Result<(), String> {
        let file = file
            .to_str()
            .ok_or_else(|| format!("{}: {} is not UTF-8", self.uri, file.display()))?;
        self.run(&["vol-upload", "--pool", pool, name, file], None)
            .map(drop)
    }

    fn delete_volume(&self, pool: &str, name: &str) -> Result<(), String> {
        self.run(&["vol-delete", name, "--pool", pool], None)
            .map(drop)
    }

    fn volumes(&self, pool: &str) -> Result<Vec<String>, String> {
        Ok(rows(&self.run(&["vol-list", pool], None)?)
            .map(|w| w[0].to_string())
            .collect())
    }

    fn pool_type(&self, pool: &str) -> Result<String, String> {
        let xml = self.run(&["pool-dumpxml", pool], None)?;
        pool_type_of(&xml).ok_or_else(|| format!("{}: pool {pool}: no type in its XML", self.uri))
    }

    fn volume_size(&self, pool: &str, name: &str) -> Result<u64, String> {
        let info = self.run(&["vol-info", "--bytes", "--pool", pool, name], None)?;
        capacity_of(&info)
            .ok_or_else(|| format!("{}: vol-info {name}: no capacity in {info:?}", self.uri))
    }

    fn define(&self, xml: &str) -> Result<(), String> {
        self.run(&["define", "/dev/stdin"], Some(xml)).map(drop)
    }

    fn start(&self, domain: &str) -> Result<(), String> {
        self.run(&["start", domain], None).map(drop)
    }

    fn channel(&self, domain: &str) -> Result<PathBuf, String> {
        let xml = self.run(&["dumpxml", domain], None)?;
        channel_path(&xml, super::CHANNEL_NAME).ok_or_else(|| {
            format!(
                "{}: domain {domain} has no {} channel socket",
                self.uri,
                super::CHANNEL_NAME
            )
        })
    }

    fn destroy(&self, domain: &str) -> Result<(), String> {
        match self.run(&["destroy", domain], None) {
            Ok(_) => Ok(()),
            Err(e) if e.contains("not running") => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn undefine(&self, domain: &str) -> Result<(), String> {
        self.run(&["undefine", domain], None).map(drop)
    }

    fn domains(&self) -> Result<Vec<String>, String> {
        Ok(rows(&self.run(&["list", "--all", "--name"], None)?)
            .map(|w| w[0].to_string())
            .collect())
    }

    fn disk_requests(&self, domain: &str, dev: &str) -> Result<(u64, u64), String> {
        let text = self.run(&["domblkstat", domain, dev], None)?;
        let field = |f: &str| {
            rows(&text)
                .find(|w| w.len() == 3 && w[1] == f)
                .and_then(|w| w[2].parse::<u64>().ok())
                .ok_or_else(|| format!("{}: domblkstat {domain} {dev}: no {f}", self.uri))
        };
        Ok((field("rd_req")?, field("wr_req")?))
    }

    fn block_requests(&self, domains: &[String]) -> Result<RequestCounts, String> {
        if domains.is_empty() {
            return Ok(RequestCounts::new());
        }
        let mut args = vec!["domstats", "--block"];
        args.extend(domains.iter().map(String::as_str));
        Ok(parse_domstats(&self.run(&args, None)?))
    }

    fn state(&self, domain: &str) -> Result<String, String> {
        Ok(self.run(&["domstate", domain], None)?.trim().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kvm_is_what_the_capabilities_list_for_an_x86_64_guest() {
        let caps = |domains: &str, arch: &str| {
            format!(
                "<capabilities><host><cpu><arch>x86_64</arch></cpu></host><guest><os_type>hvm</os_type><arch name='{arch}'><wordsize>64</wordsize><emulator>/usr/bin/qemu-system-{arch}</emulator>{domains}</arch></guest></capabilities>"
            )
        };
        assert!(offers_kvm(&caps(
            "<domain type='qemu'/><domain type='kvm'/>",
            "x86_64"
        )));
        assert!(!offers_kvm(&caps("<domain type='qemu'/>", "x86_64")));
        // KVM for another architecture's guests is not KVM for ours.
        assert!(!offers_kvm(&caps(
            "<domain type='qemu'/><domain type='kvm'/>",
            "aarch64"
        )));
        assert!(!offers_kvm("not xml"));
    }

    #[test]
    fn a_pool_s_type_and_a_volume_s_capacity_are_read() {
        assert_eq!(
            pool_type_of("<pool type='iscsi-direct'>\n  <name>p</name>").as_deref(),
            Some("iscsi-direct")
        );
        assert_eq!(pool_type_of("<pool type=\"dir\">").as_deref(), Some("dir"));
        assert_eq!(pool_type_of("<volume type='file'>"), None);
        let info = "Name:           unit:0:0:1\nType:           network\nCapacity:       67108352 bytes\nAllocation:     67108352 bytes\n";
        assert_eq!(capacity_of(info), Some(67108352));
        assert_eq!(capacity_of("Name: x\n"), None);
    }

    #[test]
    fn the_channel_socket_is_read_from_the_live_domain() {
        let xml = "<domain><devices>\
<channel type='unix'><source mode='bind' path='/var/lib/libvirt/qemu/channel/target/domain-1-x/org.qemu.guest_agent.0'/><target type='virtio' name='org.qemu.guest_agent.0'/></channel>\
<channel type='unix'>\n  <source mode='bind' path='/var/lib/libvirt/qemu/channel/target/domain-1-x/org.iofleet.join'/>\n  <target type='virtio' name='org.iofleet.join' state='connected'/>\n</channel>\
</devices></domain>";
        assert_eq!(
            channel_path(xml, "org.iofleet.join"),
            Some(PathBuf::from(
                "/var/lib/libvirt/qemu/channel/target/domain-1-x/org.iofleet.join"
            ))
        );
        assert_eq!(channel_path(xml, "other"), None);
    }

    #[test]
    fn block_requests_are_read_per_domain_and_disk() {
        let text = "Domain: 'iofleet-a-0'\n  block.count=2\n  block.0.name=vda\n  block.0.rd.reqs=10\n  block.0.wr.reqs=3\n  block.1.name=vdb\n  block.1.rd.reqs=7\n  block.1.wr.reqs=0\n\nDomain: 'iofleet-a-1'\n  block.count=1\n  block.0.name=vda\n  block.0.rd.reqs=1\n  block.0.wr.reqs=2\n";
        let c = parse_domstats(text);
        assert_eq!(c.len(), 3, "{c:?}");
        assert_eq!(c[&("iofleet-a-0".to_string(), "vdb".to_string())], (7, 0));
        assert_eq!(c[&("iofleet-a-1".to_string(), "vda".to_string())], (1, 2));
    }
}
