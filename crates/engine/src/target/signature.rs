//! On-disk signature detection: does a block device already carry a filesystem, a
//! partition table, a volume-manager label, swap, encryption or a RAID superblock?
//!
//! This is the last of the safety checks that guard a device target (see
//! `safety.rs` for the kernel-state checks). It is a pure function over bytes read from
//! the first and last MiB of the device, so every signature is unit-tested with
//! synthetic buffers and no device. It reports the first match in a fixed order (the
//! most specific signatures first, the DOS/MBR boot signature last, because FAT, NTFS
//! and GPT also carry it). It does not try to be blkid: it only has to be certain
//! enough that "no signature" means nothing well known lives there. A false positive
//! costs the user a `--destroy-data`; a false negative costs their data.

/// How many bytes from the start and from the end of a device the caller should read.
pub const PROBE_LEN: u64 = 1 << 20;

const KIB: u64 = 1024;

/// The bcache superblock magic (`bcache_magic` in the kernel), at 4096 + 24.
const BCACHE_MAGIC: [u8; 16] = [
    0xc6, 0x85, 0x73, 0xf6, 0x4e, 0x1a, 0x45, 0xca, 0x82, 0x65, 0xf5, 0x7f, 0x48, 0xba, 0x6d, 0x81,
];
/// md RAID superblock magic 0xa92b4efc (little-endian for v1.x; native for v0.90).
const MD_MAGIC: u32 = 0xa92b_4efc;
/// ZFS uberblock magic 0x00bab10c, stored in the pool's native byte order.
const ZFS_UB_MAGIC: u64 = 0x00ba_b10c;
/// F2FS superblock magic 0xF2F52010 at 1024.
const F2FS_MAGIC: u32 = 0xf2f5_2010;

/// Bytes of one device seen through its head (the first `head.len()` bytes) and its
/// tail (the last `tail.len()` bytes of a device of `dev_size` bytes).
struct View<'a> {
    head: &'a [u8],
    tail: &'a [u8],
    dev_size: u64,
}

impl View<'_> {
    /// True when `pat` is stored at absolute byte offset `off`, as far as the read
    /// bytes show (a range that neither buffer covers is "not present").
    fn has(&self, off: u64, pat: &[u8]) -> bool {
        let len = pat.len() as u64;
        let Some(end) = off.checked_add(len) else {
            return false;
        };
        if end > self.dev_size {
            return false;
        }
        if end <= self.head.len() as u64 {
            let o = off as usize;
            return &self.head[o..o + pat.len()] == pat;
        }
        let tail_start = self.dev_size.saturating_sub(self.tail.len() as u64);
        if off >= tail_start {
            let o = (off - tail_start) as usize;
            return self.tail.get(o..o + pat.len()) == Some(pat);
        }
        false
    }

    fn has_u32_any_endian(&self, off: u64, v: u32) -> bool {
        self.has(off, &v.to_le_bytes()) || self.has(off, &v.to_be_bytes())
    }

    fn has_u64_any_endian(&self, off: u64, v: u64) -> bool {
        self.has(off, &v.to_le_bytes()) || self.has(off, &v.to_be_bytes())
    }

    /// A ZFS uberblock in the ring of the vdev label that starts at `label`
    /// (the ring is the label's second 128 KiB, in slots of at least 1 KiB).
    fn has_zfs_uberblock(&self, label: u64) -> bool {
        (0..128).any(|k| self.has_u64_any_endian(label + 128 * KIB + k * KIB, ZFS_UB_MAGIC))
    }
}

/// The first well-known signature found in a device's first and last bytes, as a noun
/// phrase for "it carries …", or `None` when nothing known is there.
///
/// `head` holds the first bytes of the device and `tail` its last bytes (the caller
/// reads [`PROBE_LEN`] of each, less on a smaller device; the two may overlap);
/// `dev_size` is the device size in bytes. An iofleet fill marker is not a signature:
/// iofleet's own data may be overwritten.
pub fn detect_signature(head: &[u8], tail: &[u8], dev_size: u64) -> Option<&'static str> {
    let v = View {
        head,
        tail,
        dev_size,
    };

    // Encryption and object stores: a header at byte 0.
    if v.has(0, b"LUKS\xba\xbe") {
        return Some("a LUKS encrypted volume header");
    }
    // LUKS2 keeps a secondary header at one of these offsets (and "SKUL" at 0 when the
    // primary was overwritten by a secondary copy).
    let luks2_secondary = [0, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096];
    if luks2_secondary
        .iter()
        .any(|k| v.has(k * KIB, b"SKUL\xba\xbe"))
    {
        return Some("a LUKS2 encrypted volume header (secondary copy)");
    }
    if v.has(0, b"bluestore block device") {
        return Some("a Ceph BlueStore OSD label");
    }

    // Filesystems with their own magic.
    if v.has(0, b"XFSB") {
        return Some("an XFS filesystem signature");
    }
    if v.has(65600, b"_BHRfS_M") {
        return Some("a btrfs filesystem signature");
    }
    if v.has(1080, &0xef53u16.to_le_bytes()) {
        return Some("an ext4 filesystem signature (ext2/3/4 superblock)");
    }
    if v.has(1024, &F2FS_MAGIC.to_le_bytes()) {
        return Some("an F2FS filesystem signature");
    }

    // Volume managers, caches, RAID, pools.
    if v.has(4096 + 24, &BCACHE_MAGIC) {
        return Some("a bcache device superblock");
    }
    if [0, 512, 1024, 1536].iter().any(|&o| v.has(o, b"LABELONE")) {
        return Some("an LVM2 physical volume label");
    }
    let md = MD_MAGIC.to_le_bytes();
    if v.has(0, &md) || v.has(4096, &md) {
        return Some("a Linux md RAID superblock (metadata 1.1/1.2)");
    }
    if dev_size / 512 >= 16 {
        let v10 = ((dev_size / 512 - 16) & !7) * 512;
        if v.has(v10, &md) {
            return Some("a Linux md RAID superblock (metadata 1.0)");
        }
    }
    if dev_size >= 65536 {
        let v090 = (dev_size / 65536 - 1) * 65536;
        if v.has_u32_any_endian(v090, MD_MAGIC) {
            return Some("a Linux md RAID superblock (metadata 0.90)");
        }
    }
    let zfs_labels_front = [0, 256 * KIB];
    let psize = dev_size & !(256 * KIB - 1);
    let zfs_labels_back = [psize.checked_sub(512 * KIB), psize.checked_sub(256 * KIB)];
    if zfs_labels_front.iter().any(|&l| v.has_zfs_uberblock(l))
        || zfs_labels_back
            .iter()
            .flatten()
            .any(|&l| v.has_zfs_uberblock(l))
    {
        return Some("a ZFS pool label (uberblock)");
    }
    // Swap: the signature ends the first page, whatever the page size was.
    let swap_pages = [4096u64, 8192, 16384, 65536];
    if swap_pages
        .iter()
        .any(|&p| v.has(p - 10, b"SWAPSPACE2") || v.has(p - 10, b"SWAP-SPACE"))
    {
        return Some("a Linux swap area signature");
    }
    if v.has(32769, b"CD001") {
        return Some("an ISO 9660 filesystem signature");
    }

    // Boot-sector filesystems, then partition tables, then the bare boot signature.
    if v.has(3, b"NTFS    ") {
        return Some("an NTFS filesystem signature");
    }
    if v.has(3, b"EXFAT   ") {
        return Some("an exFAT filesystem signature");
    }
    if v.has(54, b"FAT12   ") || v.has(54, b"FAT16   ") || v.has(82, b"FAT32   ") {
        return Some("a FAT filesystem signature");
    }
    if v.has(512, b"EFI PART") || v.has(4096, b"EFI PART") {
        return Some("a GPT partition table");
    }
    let backup_gpt = [dev_size.checked_sub(512), dev_size.checked_sub(4096)];
    if backup_gpt.iter().flatten().any(|&o| v.has(o, b"EFI PART")) {
        return Some("a GPT partition table (backup header at the end of the device)");
    }
    if v.has(510, &[0x55, 0xaa]) {
        return Some("a DOS/MBR partition table or boot sector signature");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIZE: u64 = 64 << 20;

    /// A zeroed device image of `SIZE` bytes with `pat` written at `off`, probed the
    /// way the planner probes a device (first and last MiB).
    fn probe_with(writes: &[(u64, &[u8])]) -> Option<&'static str> {
        probe_sized(SIZE, writes)
    }

    fn probe_sized(size: u64, writes: &[(u64, &[u8])]) -> Option<&'static str> {
        let n = PROBE_LEN.min(size) as usize;
        let mut head = vec![0u8; n];
        let mut tail = vec![0u8; n];
        let tail_start = size - n as u64;
        for &(off, pat) in writes {
            for (i, &b) in pat.iter().enumerate() {
                let a = off + i as u64;
                if a < n as u64 {
                    head[a as usize] = b;
                }
                if a >= tail_start {
                    tail[(a - tail_start) as usize] = b;
                }
            }
        }
        detect_signature(&head, &tail, size)
    }

    fn expect(writes: &[(u64, &[u8])], needle: &str) {
        let got = probe_with(writes).unwrap_or_else(|| panic!("no signature, wanted {needle}"));
        assert!(got.contains(needle), "got {got:?}, wanted {needle:?}");
    }

    #[test]
    fn zeros_and_random_prefix_have_no_signature() {
        assert_eq!(probe_with(&[]), None);
        assert_eq!(detect_signature(&[], &[], 0), None);
        assert_eq!(detect_signature(&[0; 100], &[0; 100], 100), None);
    }

    #[test]
    fn ext4() {
        expect(&[(1080, &[0x53, 0xef])], "ext4");
        // Big-endian bytes are not the ext magic.
        assert_eq!(probe_with(&[(1080, &[0xef, 0x53])]), None);
    }

    #[test]
    fn xfs_btrfs_f2fs() {
        expect(&[(0, b"XFSB")], "XFS");
        expect(&[(65600, b"_BHRfS_M")], "btrfs");
        expect(&[(1024, &F2FS_MAGIC.to_le_bytes())], "F2FS");
    }

    #[test]
    fn mbr_and_boot_sector_filesystems() {
        expect(&[(510, &[0x55, 0xaa])], "DOS/MBR");
        // FAT and NTFS boot sectors also end in 55 AA; the specific name wins.
        expect(&[(510, &[0x55, 0xaa]), (3, b"NTFS    ")], "NTFS");
        expect(&[(510, &[0x55, 0xaa]), (3, b"EXFAT   ")], "exFAT");
        expect(&[(510, &[0x55, 0xaa]), (54, b"FAT12   ")], "FAT");
        expect(&[(54, b"FAT16   ")], "FAT");
        expect(&[(82, b"FAT32   ")], "FAT");
    }

    #[test]
    fn gpt_512_4kn_and_backup() {
        expect(&[(510, &[0x55, 0xaa]), (512, b"EFI PART")], "GPT");
        expect(&[(4096, b"EFI PART")], "GPT");
        expect(&[(SIZE - 512, b"EFI PART")], "backup header");
        expect(&[(SIZE - 4096, b"EFI PART")], "backup header");
    }

    #[test]
    fn lvm_label_in_any_of_the_first_four_sectors() {
        for off in [0u64, 512, 1024, 1536] {
            expect(&[(off, b"LABELONE")], "LVM2");
        }
        assert_eq!(probe_with(&[(2048, b"LABELONE")]), None);
    }

    #[test]
    fn swap_for_each_page_size() {
        for page in [4096u64, 8192, 16384, 65536] {
            expect(&[(page - 10, b"SWAPSPACE2")], "swap");
            expect(&[(page - 10, b"SWAP-SPACE")], "swap");
        }
    }

    #[test]
    fn luks_bluestore_bcache_iso() {
        expect(&[(0, b"LUKS\xba\xbe")], "LUKS");
        expect(&[(0, b"SKUL\xba\xbe")], "LUKS2");
        expect(&[(16384, b"SKUL\xba\xbe")], "LUKS2");
        expect(&[(0, b"bluestore block device\n")], "BlueStore");
        expect(&[(4096 + 24, &BCACHE_MAGIC)], "bcache");
        expect(&[(32769, b"CD001")], "ISO 9660");
    }

    #[test]
    fn md_raid_every_metadata_version() {
        let le = MD_MAGIC.to_le_bytes();
        expect(&[(0, &le)], "1.1/1.2");
        expect(&[(4096, &le)], "1.1/1.2");
        let v10 = ((SIZE / 512 - 16) & !7) * 512;
        expect(&[(v10, &le)], "1.0");
        let v090 = (SIZE / 65536 - 1) * 65536;
        expect(&[(v090, &le)], "0.90");
        expect(&[(v090, &MD_MAGIC.to_be_bytes())], "0.90");
        // An odd-sized device puts the 1.0 superblock at a different place.
        let odd = SIZE + 3 * 512;
        let v10_odd = ((odd / 512 - 16) & !7) * 512;
        let got = probe_sized(odd, &[(v10_odd, &le)]).unwrap();
        assert!(got.contains("1.0"), "{got}");
    }

    #[test]
    fn zfs_uberblocks_front_and_back_both_endians() {
        let le = ZFS_UB_MAGIC.to_le_bytes();
        let be = ZFS_UB_MAGIC.to_be_bytes();
        expect(&[(128 * KIB, &le)], "ZFS");
        expect(&[(128 * KIB + 5 * KIB, &be)], "ZFS");
        expect(&[(256 * KIB + 200 * KIB, &le)], "ZFS");
        expect(&[(SIZE - 512 * KIB + 128 * KIB, &le)], "ZFS");
        expect(&[(SIZE - 256 * KIB + 255 * KIB, &le)], "ZFS");
        // Outside the uberblock ring it is nothing.
        assert_eq!(probe_with(&[(64 * KIB, &le)]), None);
    }

    #[test]
    fn a_device_smaller_than_the_probe_window() {
        // 16 KiB device: head and tail are the same bytes; nothing may panic.
        let size = 16 * KIB;
        assert_eq!(probe_sized(size, &[]), None);
        let got = probe_sized(size, &[(1080, &[0x53, 0xef])]).unwrap();
        assert!(got.contains("ext4"));
        let got = probe_sized(size, &[(size - 512, b"EFI PART")]).unwrap();
        assert!(got.contains("GPT"));
    }

    #[test]
    fn an_iofleet_fill_marker_is_not_a_signature() {
        let marker =
            crate::target::fill::encode_marker(SIZE - 4096, super::super::FillPattern::Zero, 0);
        assert_eq!(probe_with(&[(SIZE - 4096, &marker)]), None);
    }
}
