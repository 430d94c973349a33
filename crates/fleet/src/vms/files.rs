//! Where a hypervisor's files and sockets live, the seam beside `Hypervisor`: this
//! machine's (`Local`, for `qemu:///…`) or another's over ssh (`remote::Ssh`, for
//! `qemu+ssh://…`).

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::Path;

/// The hypervisor's machine as the launcher uses it: the guests' boot files it writes
/// there, libvirt's logs it reads and removes, the channel sockets it connects to.
/// Errors are messages naming the hypervisor.
pub trait HostFiles {
    /// Write `data` at `path` (its directory made if need be), readable by its owner
    /// only (a guest's initramfs holds the join token).
    fn write(&self, path: &Path, data: &[u8]) -> Result<(), String>;
    /// Remove `path`; one that is not there is no error.
    fn remove(&self, path: &Path) -> Result<(), String>;
    /// Whether `path` is a regular file (following links), e.g. a kernel to boot.
    fn is_file(&self, path: &Path) -> Result<bool, String>;
    /// The names in directory `dir` (none when it does not exist).
    fn list(&self, dir: &Path) -> Result<Vec<String>, String>;
    /// The last `lines` lines of text file `path`, if it can be read.
    fn tail(&self, path: &Path, lines: usize) -> Option<String>;
    /// A connection to the Unix socket `socket` (a domain's channel; `name` is the
    /// domain's, for the local end of a forwarding).
    fn connect(&self, socket: &Path, name: &str) -> Result<UnixStream, String>;
}

/// This machine's files: the hypervisor runs here (`qemu:///system`).
pub struct Local;

impl HostFiles for Local {
    fn write(&self, path: &Path, data: &[u8]) -> Result<(), String> {
        use std::os::unix::fs::OpenOptionsExt;
        let fail = |e: std::io::Error| format!("{}: {e}", path.display());
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(fail)?;
        }
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)
            .and_then(|mut f| f.write_all(data))
            .map_err(fail)
    }

    fn remove(&self, path: &Path) -> Result<(), String> {
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(format!("{}: {e}", path.display()))
            }
            _ => Ok(()),
        }
    }

    fn is_file(&self, path: &Path) -> Result<bool, String> {
        Ok(path.is_file())
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>, String> {
        Ok(std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect())
    }

    fn tail(&self, path: &Path, lines: usize) -> Option<String> {
        let text = std::fs::read_to_string(path).ok()?;
        let mut last: Vec<&str> = text.lines().rev().take(lines).collect();
        last.reverse();
        Some(last.join("\n"))
    }

    fn connect(&self, socket: &Path, _name: &str) -> Result<UnixStream, String> {
        UnixStream::connect(socket).map_err(|e| format!("{}: {e}", socket.display()))
    }
}
