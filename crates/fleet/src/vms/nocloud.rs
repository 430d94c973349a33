//! The seed of a worker VM booted from a cloud image (`[vms.guest] image`): a small
//! disk that cloud-init's NoCloud datasource reads, holding the VM's `meta-data`
//! (instance-id and host name: its domain), a `user-data` whose `runcmd` copies iofleet
//! from the seed and starts it as the guest's agent (`iofleet agent --guest-join`, the
//! same search for the channel and the data disks as the guest iofleet builds, see
//! `guest`), this iofleet's executable and the command's join file.
//!
//! The seed is a FAT16 file system labelled `cidata` (cloud-init's NoCloud reads a vfat
//! or an ISO 9660 file system with that label, docs/vms.md cites its documentation),
//! written here, as `initramfs` writes its cpio archive: every file in the root
//! directory, each in consecutive clusters, names in long-name entries. ISO 9660 would
//! need Joliet or Rock Ridge extensions for lower-case names with `-` (`meta-data`),
//! path tables and both-endian fields: more to write for nothing the guest needs. The
//! seed is attached as a read-only disk (512-byte sectors, like the file system), not
//! as a CD-ROM, whose 2048-byte sectors a 512-byte FAT cannot sit on.
//!
//! Not here: placing the seed on the hypervisor and attaching it (the launcher and
//! `xml::Boot::Image`), and anything in the image itself: it must have cloud-init with
//! the NoCloud datasource, a kernel with virtio_console and virtio_blk or virtio_scsi,
//! and a C library the iofleet executable runs on.

use std::io::Write;

use super::guest::GuestJoin;

/// The file system label cloud-init's NoCloud datasource looks for.
pub const SEED_LABEL: &str = "cidata";
/// The agent's executable on the seed.
pub const SEED_AGENT: &str = "iofleet";
/// The command's join file on the seed (`GuestJoin` as JSON).
pub const SEED_JOIN: &str = "iofleet-join.json";
/// Where the guest mounts the seed, and keeps the agent and its join file: a tmpfs of
/// its own (nothing is written to the image; systemd mounts `/run` itself `noexec`).
pub const GUEST_DIR: &str = "/run/iofleet";

/// What one VM's seed holds.
#[derive(Debug, Clone)]
pub struct Seed<'a> {
    /// The domain's name: the guest's host name, and with the command's join
    /// fingerprint cloud-init's instance-id (`meta_data`).
    pub domain: &'a str,
    /// The iofleet executable the guest runs as its agent.
    pub iofleet: &'a [u8],
    pub join: &'a GuestJoin,
}

/// `text` as a double-quoted YAML scalar (JSON's string syntax is YAML's).
fn yaml_string(text: &str) -> String {
    serde_json::to_string(text).expect("a string serialises")
}

/// The seed's `meta-data`: the host name is the domain's name; the instance-id is the
/// domain's name and the command's (the start of its join certificate's fingerprint,
/// fresh per command), so that a kept VM booted by a later command is a new instance
/// to cloud-init and runs the seed's `runcmd`, its agent, again.
pub fn meta_data(domain: &str, fingerprint: &str) -> String {
    let command: String = fingerprint.chars().take(12).collect();
    format!(
        "instance-id: {}\nlocal-hostname: {}\n",
        yaml_string(&format!("{domain}-{command}")),
        yaml_string(domain)
    )
}

/// The seed's `user-data`: at the end of the first boot (cloud-init's `runcmd`), mount
/// the seed, copy the agent and its join file into a tmpfs, run the agent, and power
/// off when it ends, as the guest iofleet builds does.
pub fn user_data() -> String {
    let script = format!(
        "mkdir -p {dir}\n\
         mount -t tmpfs -o mode=0700 iofleet {dir} && mkdir {dir}/seed \\\n  \
         && mount -o ro LABEL={SEED_LABEL} {dir}/seed \\\n  \
         && install -m 0755 {dir}/seed/{SEED_AGENT} {dir}/iofleet \\\n  \
         && install -m 0600 {dir}/seed/{SEED_JOIN} {dir}/join.json \\\n  \
         && umount {dir}/seed \\\n  \
         && {dir}/iofleet agent --guest-join {dir}/join.json\n\
         echo \"iofleet guest: the agent ended ($?); powering off\"\n\
         poweroff\n",
        dir = GUEST_DIR
    );
    let mut out = String::from(
        "#cloud-config\n# Written by iofleet: start this worker VM's agent (docs/vms.md).\nruncmd:\n  - |\n",
    );
    for line in script.lines() {
        out.push_str("    ");
        out.push_str(line);
        out.push('\n');
    }
    out
}

impl Seed<'_> {
    /// The seed's files, by name, in the order they are written.
    pub fn files(&self) -> Vec<(&'static str, Vec<u8>)> {
        vec![
            (
                "meta-data",
                meta_data(self.domain, &self.join.fingerprint).into_bytes(),
            ),
            ("user-data", user_data().into_bytes()),
            (
                SEED_JOIN,
                serde_json::to_vec(self.join).expect("the join file serialises"),
            ),
        ]
    }

    /// Write the seed's file system to `out`; its length in bytes.
    pub fn write(&self, out: &mut impl Write) -> Result<u64, String> {
        let small = self.files();
        let mut files: Vec<(&str, &[u8])> = small.iter().map(|(n, d)| (*n, &d[..])).collect();
        files.push((SEED_AGENT, self.iofleet));
        write_vfat(out, SEED_LABEL, &files)
    }
}

/// The seed volume's capacity for an agent of `agent_bytes`: at least what any VM's
/// seed takes (its names, join file and the agent), whole MiB, with a MiB to spare, so
/// that a plan knows it before a seed is written.
pub fn capacity(agent_bytes: u64) -> Result<u64, String> {
    const MIB: u64 = 1 << 20;
    // meta-data names the domain (at most 60 characters), the join file is short.
    let layout = Layout::for_files(&[1024, user_data().len() as u64, 4096, agent_bytes])?;
    Ok((layout.total_sectors() * SECTOR).div_ceil(MIB) * MIB + MIB)
}

const SECTOR: u64 = 512;
const ROOT_ENTRIES: u64 = 512;
const ROOT_SECTORS: u64 = ROOT_ENTRIES * 32 / SECTOR;
/// FAT16's cluster counts: fewer than 4085 is FAT12 to every reader, more than 65524
/// does not fit its entries.
const FAT16_MIN_CLUSTERS: u64 = 4085;
const FAT16_MAX_CLUSTERS: u64 = 65524;
/// 1980-01-01, FAT's first day: every file has it (the seed is the same for the same
/// inputs).
const FAT_DATE: u16 = 0x0021;

/// The sizes of a FAT16 volume holding files of these lengths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    sectors_per_cluster: u64,
    clusters: u64,
    fat_sectors: u64,
}

impl Layout {
    fn for_files(lengths: &[u64]) -> Result<Layout, String> {
        for shift in 0..=6 {
            let spc = 1u64 << shift;
            let cluster = spc * SECTOR;
            let needed: u64 = lengths.iter().map(|l| l.div_ceil(cluster)).sum();
            if needed > FAT16_MAX_CLUSTERS {
                continue;
            }
            let clusters = needed.max(FAT16_MIN_CLUSTERS);
            return Ok(Layout {
                sectors_per_cluster: spc,
                clusters,
                fat_sectors: ((clusters + 2) * 2).div_ceil(SECTOR),
            });
        }
        Err(format!(
            "the seed's files ({} bytes) do not fit a FAT16 volume (at most {} MiB)",
            lengths.iter().sum::<u64>(),
            (FAT16_MAX_CLUSTERS * 64 * SECTOR) >> 20
        ))
    }

    fn cluster_bytes(&self) -> u64 {
        self.sectors_per_cluster * SECTOR
    }

    /// Sectors before the data: the boot sector, two FATs, the root directory.
    fn data_start(&self) -> u64 {
        1 + 2 * self.fat_sectors + ROOT_SECTORS
    }

    fn total_sectors(&self) -> u64 {
        self.data_start() + self.clusters * self.sectors_per_cluster
    }
}

/// The 8.3 name of file `index`: up to six characters of the long name's stem, `~`,
/// the index from 1, and up to three of its extension (unique among at most 9 files).
fn short_name(long: &str, index: usize) -> [u8; 11] {
    let keep = |s: &str, n: usize| -> Vec<u8> {
        s.bytes()
            .filter(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_')
            .map(|b| b.to_ascii_uppercase())
            .take(n)
            .collect()
    };
    let (stem, ext) = match long.rsplit_once('.') {
        Some((s, e)) if !s.is_empty() => (s, e),
        _ => (long, ""),
    };
    let mut name = [b' '; 11];
    let mut base = keep(stem, 6);
    base.extend(format!("~{}", index + 1).bytes());
    name[..base.len()].copy_from_slice(&base);
    let ext = keep(ext, 3);
    name[8..8 + ext.len()].copy_from_slice(&ext);
    name
}

/// The checksum of a short name that each of its long-name entries carries.
fn short_name_checksum(name: &[u8; 11]) -> u8 {
    name.iter()
        .fold(0u8, |sum, &b| sum.rotate_right(1).wrapping_add(b))
}

/// The directory entries of one file: its long-name entries, last part first, then
/// its short entry.
fn dir_entries(long: &str, index: usize, cluster: u16, len: u32) -> Vec<[u8; 32]> {
    let short = short_name(long, index);
    let sum = short_name_checksum(&short);
    let mut units: Vec<u16> = long.encode_utf16().collect();
    if !units.len().is_multiple_of(13) {
        units.push(0);
    }
    while !units.len().is_multiple_of(13) {
        units.push(0xFFFF);
    }
    let parts = units.len() / 13;
    let mut out = Vec::with_capacity(parts + 1);
    for seq in (1..=parts).rev() {
        let mut e = [0u8; 32];
        e[0] = seq as u8 | if seq == parts { 0x40 } else { 0 };
        e[11] = 0x0F;
        e[13] = sum;
        let chunk = &units[(seq - 1) * 13..seq * 13];
        let slots = (1..11)
            .step_by(2)
            .chain((14..26).step_by(2))
            .chain([28, 30]);
        for (u, at) in chunk.iter().zip(slots) {
            e[at..at + 2].copy_from_slice(&u.to_le_bytes());
        }
        out.push(e);
    }
    let mut e = [0u8; 32];
    e[..11].copy_from_slice(&short);
    e[11] = 0x20; // archive
    for at in [16, 18, 24] {
        e[at..at + 2].copy_from_slice(&FAT_DATE.to_le_bytes());
    }
    e[26..28].copy_from_slice(&cluster.to_le_bytes());
    e[28..32].copy_from_slice(&len.to_le_bytes());
    out.push(e);
    out
}

fn boot_sector(layout: &Layout, label: &[u8; 11], serial: u32) -> [u8; 512] {
    let mut b = [0u8; 512];
    b[..3].copy_from_slice(&[0xEB, 0x3C, 0x90]);
    b[3..11].copy_from_slice(b"IOFLEET ");
    b[11..13].copy_from_slice(&(SECTOR as u16).to_le_bytes());
    b[13] = layout.sectors_per_cluster as u8;
    b[14..16].copy_from_slice(&1u16.to_le_bytes()); // reserved sectors: this one
    b[16] = 2; // FATs
    b[17..19].copy_from_slice(&(ROOT_ENTRIES as u16).to_le_bytes());
    let total = layout.total_sectors();
    if total < 0x10000 {
        b[19..21].copy_from_slice(&(total as u16).to_le_bytes());
    } else {
        b[32..36].copy_from_slice(&(total as u32).to_le_bytes());
    }
    b[21] = 0xF8; // a fixed disk
    b[22..24].copy_from_slice(&(layout.fat_sectors as u16).to_le_bytes());
    b[24..26].copy_from_slice(&32u16.to_le_bytes()); // sectors per track
    b[26..28].copy_from_slice(&64u16.to_le_bytes()); // heads
    b[36] = 0x80;
    b[38] = 0x29; // the next three fields are there
    b[39..43].copy_from_slice(&serial.to_le_bytes());
    b[43..54].copy_from_slice(label);
    b[54..62].copy_from_slice(b"FAT16   ");
    b[510] = 0x55;
    b[511] = 0xAA;
    b
}

/// Write a FAT16 volume labelled `label` with `files` (name, contents) in its root
/// directory to `out`; its length in bytes. Names are 1 to 255 characters without `/`,
/// at most 9 files (`short_name`); the label is 1 to 11 ASCII characters.
pub fn write_vfat(
    out: &mut impl Write,
    label: &str,
    files: &[(&str, &[u8])],
) -> Result<u64, String> {
    if label.is_empty() || label.len() > 11 || !label.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(format!("seed label '{label}': 1 to 11 ASCII characters"));
    }
    if files.len() > 9 {
        return Err(format!("{} files on a seed: at most 9", files.len()));
    }
    for (name, data) in files {
        if name.is_empty() || name.len() > 255 || name.contains(['/', '\0']) {
            return Err(format!(
                "seed file name '{name}': 1 to 255 characters, no '/'"
            ));
        }
        if data.len() as u64 > u32::MAX as u64 {
            return Err(format!(
                "seed file {name}: {} bytes, more than FAT holds",
                data.len()
            ));
        }
    }
    let lengths: Vec<u64> = files.iter().map(|(_, d)| d.len() as u64).collect();
    let layout = Layout::for_files(&lengths)?;
    let cluster_bytes = layout.cluster_bytes();
    let mut label11 = [b' '; 11];
    label11[..label.len()].copy_from_slice(label.as_bytes());
    let serial = files.iter().fold(0x1F0E_E700u32, |s, (n, d)| {
        s.rotate_left(5) ^ n.len() as u32 ^ d.len() as u32
    });

    // The FAT: the media entry, the end-of-chain entry, then each file's run of
    // clusters from cluster 2 on; the root directory: the label, then each file.
    let mut fat = vec![0u8; (layout.fat_sectors * SECTOR) as usize];
    fat[..4].copy_from_slice(&[0xF8, 0xFF, 0xFF, 0xFF]);
    let mut root = Vec::with_capacity((ROOT_SECTORS * SECTOR) as usize);
    let mut vol = [0u8; 32];
    vol[..11].copy_from_slice(&label11);
    vol[11] = 0x08;
    root.extend_from_slice(&vol);
    let mut next = 2u64;
    for (i, (name, data)) in files.iter().enumerate() {
        let n = (data.len() as u64).div_ceil(cluster_bytes);
        let first = if n == 0 { 0 } else { next };
        for c in next..next + n {
            let link: u16 = if c + 1 == next + n {
                0xFFFF
            } else {
                (c + 1) as u16
            };
            fat[(c * 2) as usize..(c * 2 + 2) as usize].copy_from_slice(&link.to_le_bytes());
        }
        next += n;
        for e in dir_entries(name, i, first as u16, data.len() as u32) {
            root.extend_from_slice(&e);
        }
    }
    if root.len() as u64 > ROOT_SECTORS * SECTOR {
        return Err("the seed's names do not fit its root directory".into());
    }
    root.resize((ROOT_SECTORS * SECTOR) as usize, 0);

    let io = |e: std::io::Error| format!("writing the seed: {e}");
    out.write_all(&boot_sector(&layout, &label11, serial))
        .map_err(io)?;
    out.write_all(&fat).map_err(io)?;
    out.write_all(&fat).map_err(io)?;
    out.write_all(&root).map_err(io)?;
    let mut written = layout.data_start() * SECTOR;
    for (_, data) in files {
        out.write_all(data).map_err(io)?;
        let pad = (data.len() as u64).next_multiple_of(cluster_bytes) - data.len() as u64;
        out.write_all(&vec![0u8; pad as usize]).map_err(io)?;
        written += data.len() as u64 + pad;
    }
    // The clusters no file uses, to the volume's end.
    let end = layout.total_sectors() * SECTOR;
    let zeros = vec![0u8; cluster_bytes as usize];
    while written < end {
        out.write_all(&zeros).map_err(io)?;
        written += cluster_bytes;
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layout_is_fat16_with_room_for_every_file() {
        let small = Layout::for_files(&[10, 0, 700]).unwrap();
        assert_eq!(small.sectors_per_cluster, 1);
        assert_eq!(small.clusters, FAT16_MIN_CLUSTERS, "padded up to FAT16");
        let big = Layout::for_files(&[70 << 20, 100]).unwrap();
        assert_eq!(big.sectors_per_cluster, 4, "{big:?}");
        assert!(big.clusters <= FAT16_MAX_CLUSTERS);
        assert!(big.clusters * big.cluster_bytes() >= (70 << 20) + 100);
        assert!(big.fat_sectors * SECTOR >= (big.clusters + 2) * 2);
        let e = Layout::for_files(&[3 << 30]).unwrap_err();
        assert!(e.contains("do not fit a FAT16 volume"), "{e}");
    }

    #[test]
    fn long_names_carry_their_short_names_checksum() {
        assert_eq!(&short_name("meta-data", 0), b"META-D~1   ");
        assert_eq!(&short_name("iofleet-join.json", 3), b"IOFLEE~4JSO");
        let e = dir_entries("iofleet-join.json", 3, 9, 77);
        assert_eq!(
            e.len(),
            3,
            "17 characters: two long entries and the short one"
        );
        assert_eq!(e[0][0], 0x42, "the last part first, flagged");
        assert_eq!(e[1][0], 0x01);
        let sum = short_name_checksum(&short_name("iofleet-join.json", 3));
        assert!(e[..2].iter().all(|l| l[11] == 0x0F && l[13] == sum));
        assert_eq!(u16::from_le_bytes([e[2][26], e[2][27]]), 9);
        assert_eq!(
            u32::from_le_bytes([e[2][28], e[2][29], e[2][30], e[2][31]]),
            77
        );
    }

    #[test]
    fn bad_labels_and_names_are_refused() {
        let mut out = Vec::new();
        for (label, files, want) in [
            ("", vec![], "seed label ''"),
            ("twelve-chars", vec![], "1 to 11 ASCII"),
            ("cidata", vec![("a/b", &b""[..])], "no '/'"),
            ("cidata", vec![("x", &b""[..]); 10], "at most 9"),
        ] {
            let e = write_vfat(&mut out, label, &files).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn a_seed_fits_the_capacity_planned_for_its_agent() {
        let join = GuestJoin {
            fingerprint: "ab".repeat(32),
            token: "t".repeat(64),
            rank: 4095,
            disks: 24,
            join_timeout_s: 86400,
        };
        let domain = format!("iofleet-{}-4095", "n".repeat(40));
        for agent in [0usize, 1, 33 << 20, (33 << 20) + 511, 70 << 20] {
            let bytes = vec![7u8; agent];
            let seed = Seed {
                domain: &domain,
                iofleet: &bytes,
                join: &join,
            };
            let written = seed.write(&mut std::io::sink()).unwrap();
            let cap = capacity(agent as u64).unwrap();
            assert!(written <= cap, "{agent}: {written} > {cap}");
            assert!(
                cap.is_multiple_of(1 << 20) && cap - written <= 3 << 20,
                "{agent}: {cap}"
            );
        }
        assert!(capacity(3 << 30).is_err());
    }

    #[test]
    fn user_data_starts_the_agent_from_the_seed() {
        let u = user_data();
        assert!(u.starts_with("#cloud-config\n"), "{u}");
        assert!(
            u.contains(&format!("mount -o ro LABEL={SEED_LABEL} /run/iofleet/seed")),
            "{u}"
        );
        assert!(
            u.contains("/run/iofleet/iofleet agent --guest-join /run/iofleet/join.json"),
            "{u}"
        );
        assert_eq!(
            meta_data("iofleet-a-0", "0123456789abcdef0123"),
            "instance-id: \"iofleet-a-0-0123456789ab\"\nlocal-hostname: \"iofleet-a-0\"\n"
        );
    }
}
