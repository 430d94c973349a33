//! An iSCSI target for worker-VM tests: Debian's user-space `tgtd` on a loopback portal
//! with a control port of its own, one target whose LUNs are files in a temp dir, and a
//! libvirt `iscsi-direct` pool over it (libvirt and QEMU reach it through libiscsi, no
//! kernel initiator). Everything is removed when the guard drops: the pool, the daemon
//! (shut down through its control port, then killed), the files.
//!
//! Include with `#[path = "support/iscsi.rs"] mod iscsi;` beside `support/libvirt.rs`.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const IQN: &str = "iqn.2026-12.org.iofleet:test";

pub struct Iscsi {
    tgtd: Child,
    control: u16,
    pub pool: String,
    /// The LUNs' backing files, LUN 1 first (LUN 0 is the target's controller).
    pub luns: Vec<PathBuf>,
    _dir: tempfile::TempDir,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Iscsi {
    /// `tgtd` on 127.0.0.1 with `luns` LUNs of `bytes` each, and pool `pool` over them.
    pub fn start(pool: &str, luns: usize, bytes: u64) -> Iscsi {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        // The control port names the daemon's management socket; keep it apart from
        // any other tgtd's.
        let control = 20000 + port % 10000;
        let tgtd = Command::new("tgtd")
            .args(["-f", "-C", &control.to_string()])
            .arg("--iscsi")
            .arg(format!("portal=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("tgtd (Debian's tgt)");
        let mut me = Iscsi {
            tgtd,
            control,
            pool: pool.to_string(),
            luns: Vec::new(),
            _dir: dir,
        };
        let began = Instant::now();
        while me.tgtadm(&["--op", "show", "--mode", "target"]).is_err() {
            assert!(
                began.elapsed() < Duration::from_secs(20),
                "tgtd did not answer"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        me.tgtadm(&["--op", "new", "--mode", "target", "--tid", "1", "-T", IQN])
            .unwrap();
        for i in 1..=luns {
            let f = me._dir.path().join(format!("lun{i}.img"));
            std::fs::File::create(&f).unwrap().set_len(bytes).unwrap();
            me.tgtadm(&[
                "--op",
                "new",
                "--mode",
                "logicalunit",
                "--tid",
                "1",
                "--lun",
                &i.to_string(),
                "-b",
                f.to_str().unwrap(),
            ])
            .unwrap();
            me.luns.push(f);
        }
        me.tgtadm(&[
            "--op", "bind", "--mode", "target", "--tid", "1", "-I", "ALL",
        ])
        .unwrap();
        let _ = super::libvirt::virsh(&["pool-destroy", pool]);
        let xml = me._dir.path().join("pool.xml");
        std::fs::write(
            &xml,
            format!(
                "<pool type='iscsi-direct'>\n  <name>{pool}</name>\n  <source>\n    <host name='127.0.0.1' port='{port}'/>\n    <device path='{IQN}'/>\n    <initiator>\n      <iqn name='iqn.2026-12.org.iofleet:initiator'/>\n    </initiator>\n  </source>\n</pool>\n"
            ),
        )
        .unwrap();
        super::libvirt::virsh(&["pool-create", xml.to_str().unwrap()])
            .unwrap_or_else(|e| panic!("an iscsi-direct pool over tgtd: {e}"));
        me
    }

    fn tgtadm(&self, args: &[&str]) -> Result<String, String> {
        let o = Command::new("tgtadm")
            .args(["-C", &self.control.to_string(), "--lld", "iscsi"])
            .args(args)
            .output()
            .map_err(|e| format!("tgtadm: {e}"))?;
        if o.status.success() {
            Ok(String::from_utf8_lossy(&o.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&o.stderr).trim().to_string())
        }
    }

    /// The pool's volumes, as libvirt lists them.
    pub fn volumes(&self) -> Vec<String> {
        super::libvirt::virsh(&["vol-list", &self.pool])
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_whitespace().next().map(String::from))
            .collect()
    }
}

impl Drop for Iscsi {
    fn drop(&mut self) {
        let _ = super::libvirt::virsh(&["pool-destroy", &self.pool]);
        let _ = self.tgtadm(&["--op", "delete", "--mode", "system"]);
        let began = Instant::now();
        while began.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.tgtd.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.tgtd.kill();
        let _ = self.tgtd.wait();
    }
}
