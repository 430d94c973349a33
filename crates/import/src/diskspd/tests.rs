use iofleet_profile::{resolve, Context, Overrides};

use super::*;

fn ok(line: &str) -> DiskspdImport {
    read(line).unwrap_or_else(|e| panic!("{line}: {e}"))
}

/// The flags refused, as written.
fn refused(line: &str) -> Vec<FlagProblem> {
    match read(line) {
        Err(DiskspdError::Flags(p)) => p,
        other => panic!("{line}: not refused by flag: {other:?}"),
    }
}

fn stream(i: &DiskspdImport) -> &RawStream {
    &i.raw.streams[0]
}

#[test]
fn defaults_are_diskspds() {
    let i = ok("diskspd.exe t.dat");
    let s = stream(&i);
    assert_eq!(s.bs.as_deref(), Some("65536"));
    assert_eq!((s.read_pct, s.random_pct), (Some(100.0), Some(0.0)));
    let f = &i.raw.fleet;
    assert_eq!((f.workers, f.disks_per_worker), (Some(1), Some(1)));
    assert_eq!((f.threads_per_disk, f.qd), (Some(1), Some(2)));
    let t = &i.raw.timing;
    assert_eq!(
        (t.warmup.as_deref(), t.duration.as_deref()),
        (Some("5s"), Some("10s"))
    );
    assert!(!i.direct, "DISKSPD caches unless -S says otherwise");
    assert_eq!(i.raw.data.write_through, None);
    assert_eq!(i.targets, vec![DiskspdTarget::File("t.dat".into())]);
}

#[test]
fn b_sizes_take_diskspds_suffixes() {
    assert_eq!(stream(&ok("-b4K t")).bs.as_deref(), Some("4096"));
    assert_eq!(stream(&ok("-b8k t")).bs.as_deref(), Some("8192"));
    assert_eq!(stream(&ok("-b1M t")).bs.as_deref(), Some("1048576"));
    // A bare number is bytes, as in DISKSPD: -b4 is 4 bytes (refused by the profile).
    assert_eq!(stream(&ok("-b4 t")).bs.as_deref(), Some("4"));
    let p = refused("-b4x t");
    assert_eq!(p[0].flag, "-b4x");
    assert!(p[0].message.contains("unknown size suffix"), "{p:?}");
    // `b` is blocks of -b wherever -b is written.
    let i = ok("-c8b -b4K t");
    assert_eq!(i.raw.fleet.disk_size.as_deref(), Some("32768"));
}

#[test]
fn t_and_f_set_threads_per_disk_and_conflict() {
    assert_eq!(ok("-t4 t").raw.fleet.threads_per_disk, Some(4));
    let i = ok("-F3 -r a b");
    assert_eq!(i.raw.fleet.threads_per_disk, Some(3));
    assert!(
        i.notices.iter().any(|n| n.starts_with("diskspd -F3:")),
        "{:?}",
        i.notices
    );
    let p = refused("-t2 -F2 t");
    assert_eq!(p[0].flag, "-F2");
    assert_eq!(refused("-t0 t")[0].flag, "-t0");
}

#[test]
fn o_is_the_queue_depth_per_thread() {
    assert_eq!(ok("-o16 t").raw.fleet.qd, Some(16));
    assert_eq!(refused("-o0 t")[0].flag, "-o0");
}

#[test]
fn w_is_the_write_percentage() {
    assert_eq!(stream(&ok("-w30 t")).read_pct, Some(70.0));
    assert_eq!(stream(&ok("-w0 t")).read_pct, Some(100.0));
    assert_eq!(stream(&ok("-w t")).read_pct, Some(100.0));
    assert_eq!(stream(&ok("-w100 t")).read_pct, Some(0.0));
    assert_eq!(refused("-w101 t")[0].flag, "-w101");
    let i = ok("-w50 t");
    assert!(i
        .notices
        .iter()
        .any(|n| n.contains("repeats the bytes 0 to 255")));
}

#[test]
fn r_rs_and_s_set_the_random_share_and_alignment() {
    let i = ok("-r t");
    assert_eq!(
        (stream(&i).random_pct, stream(&i).align.as_deref()),
        (Some(100.0), None)
    );
    let i = ok("-b4K -r8K t");
    assert_eq!(stream(&i).align.as_deref(), Some("8192"));
    assert_eq!(stream(&ok("-rs30 -r t")).random_pct, Some(30.0));
    assert_eq!(stream(&ok("-rs30 t")).random_pct, Some(30.0));
    assert_eq!(refused("-rs0 t")[0].flag, "-rs0");
    let i = ok("-rs30 -w40 t");
    assert!(i
        .notices
        .iter()
        .any(|n| n.starts_with("diskspd -rs30:") && n.contains("one direction")));
    assert!(!ok("-rs30 t")
        .notices
        .iter()
        .any(|n| n.contains("one direction")));
    assert_eq!(stream(&ok("-s t")).random_pct, Some(0.0));
    assert_eq!(stream(&ok("-b8K -s8K t")).random_pct, Some(0.0));
    let p = refused("-b8K -s64K t");
    assert!(p[0].message.contains("stride of 65536"), "{p:?}");
    // -r wins over -s, as in DISKSPD, with a notice.
    let i = ok("-s -r t");
    assert_eq!(stream(&i).random_pct, Some(100.0));
    assert!(i
        .notices
        .iter()
        .any(|n| n.starts_with("diskspd -s: ignored")));
}

#[test]
fn si_is_refused_only_where_threads_would_share_a_cursor() {
    assert_eq!(stream(&ok("-si t")).random_pct, Some(0.0));
    let p = refused("-t4 -si t");
    assert_eq!(p[0].flag, "-si");
    assert!(p[0].message.contains("one sequential offset"), "{p:?}");
}

#[test]
fn t_offsets_map_when_they_are_iofleets_even_spacing() {
    // 4 threads over 64 MiB: iofleet starts them 16 MiB apart.
    let i = ok("-t4 -c64M -T16M t");
    assert_eq!(i.raw.fleet.threads_per_disk, Some(4));
    let p = refused("-t4 -c64M -T1M t");
    assert_eq!(p[0].flag, "-T1M");
    assert!(p[0].message.contains("-T16777216"), "{p:?}");
    // Without -T, DISKSPD's threads overlap: a notice.
    let i = ok("-t2 t");
    assert!(
        i.notices.iter().any(|n| n.contains("at one offset")),
        "{:?}",
        i.notices
    );
    // Random I/O has no cursor to space.
    assert!(ok("-t4 -r -T1M t")
        .notices
        .iter()
        .any(|n| n.starts_with("diskspd -T1M: no effect")));
}

#[test]
fn p_is_refused_where_outstanding_ios_would_share_an_offset() {
    assert_eq!(refused("-o4 -p t")[0].flag, "-p");
    assert!(ok("-o1 -p t")
        .notices
        .iter()
        .any(|n| n.starts_with("diskspd -p: no effect")));
    assert!(ok("-o8 -r -p t")
        .notices
        .iter()
        .any(|n| n.starts_with("diskspd -p:")));
}

#[test]
fn d_w_and_c_are_seconds() {
    let t = ok("-d900 -W30 t").raw.timing;
    assert_eq!(
        (t.warmup.as_deref(), t.duration.as_deref()),
        (Some("30s"), Some("900s"))
    );
    assert!(ok("-C5 t")
        .notices
        .iter()
        .any(|n| n.starts_with("diskspd -C5:")));
    assert!(!ok("-C0 t").notices.iter().any(|n| n.contains("-C0")));
    assert_eq!(refused("-d1m t")[0].flag, "-d1m");
}

#[test]
fn g_is_a_rate_per_thread_per_target() {
    // IOPS: 100 per thread per target, 2 threads × 3 targets.
    let i = ok("-g100i -t2 -r a b c");
    assert_eq!(i.raw.timing.rate_iops, Some(600.0));
    assert_eq!(i.raw.timing.arrival.as_deref(), Some("uniform"));
    // Bytes per millisecond: 4096 B/ms at 4 KiB blocks is 1000 IOPS.
    let i = ok("-b4K -g4096 t");
    assert_eq!(i.raw.timing.rate_iops, Some(1000.0));
    assert_eq!(refused("-g0 t")[0].flag, "-g0");
    assert_eq!(refused("-gx t")[0].flag, "-gx");
}

#[test]
fn b_upper_f_and_c_bound_the_target() {
    let i = ok("-c100M -f25M t");
    assert_eq!(i.raw.fleet.disk_size.as_deref(), Some("104857600"));
    assert_eq!(stream(&i).working_set_pct, Some(25.0));
    assert_eq!(stream(&ok("-c100M -B0:50M t")).working_set_pct, Some(50.0));
    assert_eq!(refused("-c100M -B1M t")[0].flag, "-B1M");
    assert_eq!(refused("-f25M t")[0].flag, "-f25M");
    assert!(ok("-c10M -fr t")
        .notices
        .iter()
        .any(|n| n.starts_with("diskspd -fr:")));
    let i = ok("-c1000001 t");
    assert_eq!(i.raw.fleet.disk_size.as_deref(), Some("999424"));
}

#[test]
fn s_and_h_set_direct_io_and_write_through() {
    for (line, direct, through) in [
        ("-Sh t", true, true),
        ("-h t", true, true),
        ("-Su t", true, false),
        ("-S t", true, false),
        ("-Sw t", false, true),
        ("-Suw t", true, true),
        ("-Sb t", false, false),
    ] {
        let i = ok(line);
        assert_eq!(i.direct, direct, "{line}");
        assert_eq!(i.raw.data.write_through, through.then_some(true), "{line}");
    }
    assert_eq!(refused("-Sm t")[0].flag, "-Sm");
    assert_eq!(refused("-Sr t")[0].flag, "-Sr");
    assert_eq!(refused("-Sx t")[0].flag, "-Sx");
}

#[test]
fn z_sets_the_written_data() {
    assert_eq!(ok("-Z t").raw.data.pattern.as_deref(), Some("zero"));
    assert_eq!(ok("-Zr t").raw.data.pattern.as_deref(), Some("random"));
    let i = ok("-Z1M t");
    assert_eq!(i.raw.data.pattern.as_deref(), Some("random"));
    assert!(i.notices.iter().any(|n| n.starts_with("diskspd -Z1M:")));
    assert_eq!(refused("-Z1M,seed.bin t")[0].flag, "-Z1M,seed.bin");
}

#[test]
fn flags_that_do_not_change_the_io_get_a_notice_and_others_are_refused() {
    let i = ok("-L -D500 -Rxml -v -P1000 -x -l -a0,1 -n -z7 t");
    for f in [
        "-L", "-D500", "-Rxml", "-v", "-P1000", "-x", "-l", "-a0,1", "-n", "-z7",
    ] {
        assert!(
            i.notices
                .iter()
                .any(|n| n.starts_with(&format!("diskspd {f}: accepted"))),
            "{f}: {:?}",
            i.notices
        );
    }
    let p = refused("-rdpct90/10 -i4 -j10 -Xp.xml -Q t");
    let flags: Vec<&str> = p.iter().map(|p| p.flag.as_str()).collect();
    assert_eq!(flags, ["-rdpct90/10", "-i4", "-j10", "-Xp.xml", "-Q"]);
    assert!(p[4].message.contains("unknown DISKSPD flag"), "{p:?}");
}

#[test]
fn targets_are_files_disk_numbers_or_drive_letters_after_the_flags() {
    let i = ok(r#".\diskspd.exe -r "C:\with space\a.dat" #1 e: /mnt/x/b.dat"#);
    assert_eq!(
        i.targets,
        vec![
            DiskspdTarget::File(r"C:\with space\a.dat".into()),
            DiskspdTarget::Disk(1),
            DiskspdTarget::Drive('E'),
            DiskspdTarget::File("/mnt/x/b.dat".into()),
        ]
    );
    assert_eq!(i.raw.fleet.disks_per_worker, Some(4));
    assert_eq!(read("-r -b4K"), Err(DiskspdError::NoTarget));
    assert_eq!(refused("-r t -b4K")[0].flag, "-b4K");
    assert_eq!(split_args("-r \"a b"), Err(DiskspdError::Quote));
    // DISKSPD's other switch character.
    assert_eq!(stream(&ok("/b4K /r t")).random_pct, Some(100.0));
}

/// The StarWind report's line (../shared/seeds/004: `.\diskspd.exe -b4 -t1 -o16 -w0 -Sh
/// -L -r -d900 [...]`), with the block size its prose gives (`-b4K`, 4 kB) and a target.
#[test]
fn the_starwind_line_resolves_to_its_workload() {
    let i = ok(r".\diskspd.exe -b4K -t1 -o16 -w0 -Sh -L -r -d900 data.dat");
    let p = resolve(&i.raw, &Overrides::default(), &Context { direct: i.direct }).unwrap();
    assert_eq!(p.streams[0].bs.max().0, 4096);
    assert_eq!(
        (p.streams[0].read_pct, p.streams[0].random_pct),
        (100.0, 100.0)
    );
    assert_eq!((p.fleet.threads_per_disk, p.fleet.qd), (1, 16));
    assert_eq!(p.timing.duration.as_secs(), 900);
    assert_eq!(p.timing.warmup.as_secs(), 5);
    assert!(i.direct && p.data.write_through);
    // As quoted, -b4 is 4 bytes: the profile refuses it, naming the key -b maps to.
    let i = ok(r".\diskspd.exe -b4 -t1 -o16 -w0 -Sh -L -r -d900 data.dat");
    let e = resolve(&i.raw, &Overrides::default(), &Context { direct: true }).unwrap_err();
    assert_eq!(e.key().and_then(flag_of_key), Some("-b"), "{e}");
}

proptest::proptest! {
    #[test]
    fn any_line_reads_or_is_refused_naming_a_flag_it_holds(
        words in proptest::collection::vec("-?[a-zA-Z#:?/]{0,2}[0-9]{0,4}[kKmMgGbi]?", 0..8)
    ) {
        let line = words.join(" ");
        match read(&line) {
            Ok(i) => {
                proptest::prop_assert!(!i.targets.is_empty());
                proptest::prop_assert_eq!(i.raw.fleet.disks_per_worker, Some(i.targets.len() as i64));
                let s = &i.raw.streams[0];
                let (r, x) = (s.read_pct.unwrap(), s.random_pct.unwrap());
                proptest::prop_assert!((0.0..=100.0).contains(&r) && (0.0..=100.0).contains(&x));
            }
            Err(DiskspdError::Flags(p)) => {
                for f in &p {
                    proptest::prop_assert!(words.contains(&f.flag), "{} not in {:?}", f.flag, words);
                }
            }
            Err(DiskspdError::NoTarget) => {}
            Err(DiskspdError::Quote) => proptest::prop_assert!(line.contains('"')),
        }
    }

    #[test]
    fn split_args_keeps_every_unquoted_word(words in proptest::collection::vec("[a-zA-Z0-9#:.,/\\\\-]{1,8}", 0..6)) {
        proptest::prop_assert_eq!(split_args(&words.join("  ")).unwrap(), words);
    }
}
