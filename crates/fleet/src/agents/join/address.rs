//! How an agent finds its controller: the join address the controller prints,
//! `iofleet://HOST:PORT/FINGERPRINT` (the certificate's SHA-256 in hex), and the join
//! file it writes (mode 0600) with that address and the token, for agents on a shared
//! file system (`iofleet agent --join-file FILE`). The token is never part of an
//! address or a command line.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::creds::parse_fingerprint;

pub const SCHEME: &str = "iofleet://";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinAddress {
    /// `HOST:PORT` as given (a name is resolved by the agent).
    pub endpoint: String,
    /// The pinned certificate's SHA-256, lower-case hex.
    pub fingerprint: String,
}

impl JoinAddress {
    pub fn parse(s: &str) -> Result<Self, String> {
        let rest = s.strip_prefix(SCHEME).ok_or_else(|| {
            format!(
                "{s:?} is not a join address: it starts with {SCHEME} (the controller prints it)"
            )
        })?;
        let (endpoint, fp) = rest
            .rsplit_once('/')
            .ok_or_else(|| format!("{s:?} has no fingerprint: {SCHEME}HOST:PORT/FINGERPRINT"))?;
        let (host, port) = endpoint
            .rsplit_once(':')
            .ok_or_else(|| format!("{s:?} has no port: {SCHEME}HOST:PORT/FINGERPRINT"))?;
        if host.is_empty() || port.parse::<u16>().is_err() {
            return Err(format!("{s:?}: {endpoint:?} is not HOST:PORT"));
        }
        parse_fingerprint(fp).map_err(|e| format!("{s:?}: {e}"))?;
        Ok(JoinAddress {
            endpoint: endpoint.to_string(),
            fingerprint: fp.to_ascii_lowercase(),
        })
    }
}

impl std::fmt::Display for JoinAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{SCHEME}{}/{}", self.endpoint, self.fingerprint)
    }
}

/// The join file: the address and the token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JoinFile {
    pub join: String,
    pub token: String,
}

impl JoinFile {
    /// Write it readable by its owner only (created so: never readable by others, not
    /// even for a moment); an existing file is replaced. The file appears whole: it is
    /// written under a temporary name beside it and renamed into place, so an agent
    /// that a launcher started early never reads half of it.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(format!(".{}.tmp", std::process::id()));
        let tmp = path.with_file_name(name);
        let _ = std::fs::remove_file(&tmp);
        let written = (|| {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(serde_json::to_string(self).expect("serialises").as_bytes())?;
            f.write_all(b"\n")?;
            f.sync_all()?;
            std::fs::rename(&tmp, path)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }

    pub fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the join file {}: {e}", path.display()))?;
        let file: JoinFile = serde_json::from_str(&text)
            .map_err(|e| format!("{} is not a join file: {e}", path.display()))?;
        JoinAddress::parse(&file.join).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FP: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn an_address_reads_back_as_written() {
        let a =
            JoinAddress::parse(&format!("iofleet://10.0.0.1:7070/{}", FP.to_uppercase())).unwrap();
        assert_eq!(a.endpoint, "10.0.0.1:7070");
        assert_eq!(a.fingerprint, FP);
        assert_eq!(JoinAddress::parse(&a.to_string()).unwrap(), a);
        let v6 = JoinAddress::parse(&format!("iofleet://[::1]:7070/{FP}")).unwrap();
        assert_eq!(v6.endpoint, "[::1]:7070");
    }

    #[test]
    fn a_bad_address_says_what_is_wrong() {
        for (bad, says) in [
            (format!("https://h:1/{FP}"), "starts with iofleet://"),
            ("iofleet://h:1".to_string(), "no fingerprint"),
            (format!("iofleet://h/{FP}"), "no port"),
            (format!("iofleet://h:99999/{FP}"), "is not HOST:PORT"),
            (format!("iofleet://:1/{FP}"), "is not HOST:PORT"),
            ("iofleet://h:1/abc".to_string(), "64 hex digits"),
        ] {
            let e = JoinAddress::parse(&bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn the_join_file_is_its_owners_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("join");
        std::fs::write(&path, "old").unwrap();
        let f = JoinFile {
            join: format!("iofleet://h:1/{FP}"),
            token: "t".into(),
        };
        f.write(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(JoinFile::read(&path).unwrap(), f);
        // It appeared whole under its own name: nothing else is left beside it.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["join"]);
        // A symbolic link in its place is replaced, never followed.
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "keep").unwrap();
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        f.write(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "keep");
        assert_eq!(JoinFile::read(&path).unwrap(), f);
        std::fs::write(&path, "{\"join\":\"x\",\"token\":\"t\"}").unwrap();
        assert!(JoinFile::read(&path)
            .unwrap_err()
            .contains("is not a join address"));
        std::fs::write(&path, "nonsense").unwrap();
        assert!(JoinFile::read(&path)
            .unwrap_err()
            .contains("is not a join file"));
    }
}
