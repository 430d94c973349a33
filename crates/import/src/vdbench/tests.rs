use iofleet_profile::raw::{RawDisks, RawStream};
use iofleet_profile::{resolve, Context, Overrides};
use proptest::prelude::*;

use super::*;

fn ok(text: &str) -> VdbenchImport {
    read_text(text, "t.vdb").unwrap_or_else(|e| panic!("{text}\n{e}"))
}

/// The parameters refused, as (line, parameter).
fn refused(text: &str) -> Vec<(usize, String, String)> {
    match read_text(text, "t.vdb") {
        Err(VdbenchError::Unsupported(p)) => p
            .into_iter()
            .map(|p| (p.at.line, p.parameter, p.message))
            .collect(),
        other => panic!("{text}\nnot refused by parameter: {other:?}"),
    }
}

fn stream(i: &VdbenchImport) -> &RawStream {
    &i.steps[0].raw.streams[0]
}

const SD: &str = "sd=sd1,lun=/dev/sdb,size=64m\n";

/// The file HCIBench writes for the workload the VxRail report names
/// (../shared/seeds/002_3b2e3988706f2153.txt: "vdb-8vmdk-10ws-4k-70rdpct-30randompct-2threads"),
/// as HCIBench's generator lays it out: comment header, general parameters, one sd per
/// disk, one wd over all sds, one rd of the report's test time ("Czas trwania każdego
/// testu | 10 minut"; HCIBench writes warmup and interval only when they are given).
pub(crate) const HCIBENCH_VXRAIL: &str = "\
*Auto Generated VDBench Parameter File
*8 raw disk, 30% random, 70% read
*SD:    Storage Definition
*WD:    Workload Definition
*RD:    Run Definition
debug=86
data_errors=10000
sd=sd1,lun=/dev/sda,openflags=o_direct,hitarea=0,range=(0,10),threads=2
sd=sd2,lun=/dev/sdb,openflags=o_direct,hitarea=0,range=(0,10),threads=2
sd=sd3,lun=/dev/sdc,openflags=o_direct,hitarea=0,range=(0,10),threads=2
sd=sd4,lun=/dev/sdd,openflags=o_direct,hitarea=0,range=(0,10),threads=2
sd=sd5,lun=/dev/sde,openflags=o_direct,hitarea=0,range=(0,10),threads=2
sd=sd6,lun=/dev/sdf,openflags=o_direct,hitarea=0,range=(0,10),threads=2
sd=sd7,lun=/dev/sdg,openflags=o_direct,hitarea=0,range=(0,10),threads=2
sd=sd8,lun=/dev/sdh,openflags=o_direct,hitarea=0,range=(0,10),threads=2
wd=wd1,sd=(sd1,sd2,sd3,sd4,sd5,sd6,sd7,sd8),xfersize=4k,rdpct=70,seekpct=30
rd=run1,wd=wd1,iorate=max,elapsed=600
";

#[test]
fn hcibench_vxrail_file_is_the_workload_its_name_describes() {
    let i = ok(HCIBENCH_VXRAIL);
    assert_eq!(i.steps.len(), 1);
    let raw = &i.steps[0].raw;
    // 8 vmdk, 2 threads each.
    assert_eq!(raw.fleet.workers, Some(1));
    assert_eq!(raw.fleet.disks_per_worker, Some(8));
    assert_eq!(raw.fleet.threads_per_disk, Some(2));
    assert_eq!(raw.fleet.qd, Some(1));
    let s = stream(&i);
    // 10ws, 4k, 70rdpct, 30randompct.
    assert_eq!(s.working_set_pct, Some(10.0));
    assert_eq!(s.bs.as_deref(), Some("4096"));
    assert_eq!((s.read_pct, s.random_pct), (Some(70.0), Some(30.0)));
    assert_eq!(s.disks, None, "one wd on every sd drives every disk");
    assert_eq!(raw.timing.duration.as_deref(), Some("600s"));
    assert_eq!(raw.timing.warmup, None);
    assert_eq!(raw.timing.interval.as_deref(), Some("1s"));
    assert_eq!(raw.timing.rate_iops, None);
    assert!(i.direct);
    assert_eq!(i.luns.len(), 8);
    // debug, data_errors and hitarea change nothing: each a notice, once per line.
    for k in ["debug", "data_errors", "hitarea"] {
        assert!(
            i.notices.iter().any(|n| n.contains(k)),
            "{k}: {:?}",
            i.notices
        );
    }
    // hitarea is on all eight sd lines, noticed once.
    let hits = i.notices.iter().filter(|n| n.contains("hitarea")).count();
    assert_eq!(hits, 1, "{:?}", i.notices);
    let plan = resolve(raw, &Overrides::default(), &Context { direct: true }).unwrap();
    assert_eq!(plan.fleet.disks_per_worker, 8);
    assert_eq!(plan.streams[0].working_set_pct, 10.0);
}

#[test]
fn defaults_are_vdbenchs() {
    let i = ok(&format!("{SD}wd=wd1,sd=sd1\nrd=rd1,wd=wd1\n"));
    let s = stream(&i);
    assert_eq!(s.bs.as_deref(), Some("4096"));
    assert_eq!((s.read_pct, s.random_pct), (Some(100.0), Some(100.0)));
    let raw = &i.steps[0].raw;
    assert_eq!(raw.fleet.threads_per_disk, Some(8));
    assert_eq!(raw.timing.duration.as_deref(), Some("30s"));
    assert_eq!(raw.timing.interval.as_deref(), Some("1s"));
    assert!(!i.direct, "vdbench caches unless openflags says otherwise");
}

#[test]
fn default_definitions_fill_what_later_ones_leave_out() {
    let i = ok(
        "sd=default,size=32m,threads=3\nsd=sd1,lun=a\nsd=sd2,lun=b\n\
                wd=default,xfersize=8k,rdpct=40\nwd=wd1,sd=sd*\n\
                rd=default,elapsed=5,interval=1\nrd=rd1,wd=wd1\n",
    );
    let raw = &i.steps[0].raw;
    assert_eq!(raw.fleet.disk_size.as_deref(), Some("33554432"));
    assert_eq!(raw.fleet.threads_per_disk, Some(3));
    assert_eq!(raw.fleet.disks_per_worker, Some(2));
    assert_eq!(stream(&i).bs.as_deref(), Some("8192"));
    assert_eq!(stream(&i).read_pct, Some(40.0));
    assert_eq!(raw.timing.duration.as_deref(), Some("5s"));
    // An own value wins over the default.
    let i = ok("sd=default,threads=3\nsd=sd1,lun=a,threads=5\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1\n");
    assert_eq!(i.steps[0].raw.fleet.threads_per_disk, Some(5));
}

#[test]
fn lun_and_size_make_the_disks() {
    let i = ok("sd=sd1,lun=/data/f1,size=1g\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1\n");
    assert_eq!(i.luns, vec!["/data/f1".to_string()]);
    assert_eq!(
        i.steps[0].raw.fleet.disk_size.as_deref(),
        Some("1073741824")
    );
    let i = ok("sd=sd1,lun=/dev/sdb\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1\n");
    assert_eq!(i.steps[0].raw.fleet.disk_size, None);
    assert!(
        i.notices.iter().any(|n| n.contains("no size")),
        "{:?}",
        i.notices
    );
    let p = refused("sd=sd1,lun=a,size=12q\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1\n");
    assert_eq!((p[0].0, p[0].1.as_str()), (1, "size"));
}

#[test]
fn range_is_the_working_set_from_the_start() {
    let i = ok("sd=sd1,lun=a,range=(0,25)\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1\n");
    assert_eq!(stream(&i).working_set_pct, Some(25.0));
    let i = ok("sd=sd1,lun=a\nwd=wd1,sd=sd1,range=(0,40)\nrd=rd1,wd=wd1\n");
    assert_eq!(stream(&i).working_set_pct, Some(40.0));
    let p = refused("sd=sd1,lun=a,range=(10,20)\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1\n");
    assert_eq!((p[0].0, p[0].1.as_str()), (1, "range"));
    assert!(p[0].2.contains("from its start"), "{p:?}");
}

#[test]
fn threads_come_from_the_sd_or_the_rd() {
    let i = ok("sd=sd1,lun=a,threads=4\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1\n");
    assert_eq!(i.steps[0].raw.fleet.threads_per_disk, Some(4));
    let i = ok("sd=sd1,lun=a,threads=4\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1,threads=16\n");
    assert_eq!(i.steps[0].raw.fleet.threads_per_disk, Some(16));
    let p = refused("sd=sd1,lun=a,threads=0\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1\n");
    assert_eq!(p[0].1, "threads");
}

#[test]
fn openflags_set_direct_and_write_through() {
    let i = ok("sd=sd1,lun=a,openflags=o_direct\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1\n");
    assert!(i.direct);
    assert_eq!(i.steps[0].raw.data.write_through, None);
    let i = ok("sd=sd1,lun=a,openflags=(o_direct,o_dsync)\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1\n");
    assert!(i.direct);
    assert_eq!(i.steps[0].raw.data.write_through, Some(true));
    let p = refused("sd=sd1,lun=a,openflags=fsync\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1\n");
    assert_eq!((p[0].0, p[0].1.as_str()), (1, "openflags"));
}

#[test]
fn xfersize_is_fixed_or_a_distribution() {
    let i = ok(&format!("{SD}wd=wd1,sd=sd1,xfersize=64k\nrd=rd1,wd=wd1\n"));
    assert_eq!(stream(&i).bs.as_deref(), Some("65536"));
    let i = ok(&format!(
        "{SD}wd=wd1,sd=sd1,xfersize=(4k,50,8k,50)\nrd=rd1,wd=wd1\n"
    ));
    assert_eq!(stream(&i).bs.as_deref(), Some("4096:50,8192:50"));
    let raw = &i.steps[0].raw;
    let plan = resolve(raw, &Overrides::default(), &Context { direct: true }).unwrap();
    assert_eq!(plan.streams[0].bs.max().get(), 8192);
    let p = refused(&format!(
        "{SD}wd=wd1,sd=sd1,xfersize=(4k,60,8k,50)\nrd=rd1,wd=wd1\n"
    ));
    assert_eq!((p[0].0, p[0].1.as_str()), (2, "xfersize"));
    assert!(p[0].2.contains("add up to 110"), "{p:?}");
    let p = refused(&format!(
        "{SD}wd=wd1,sd=sd1,xfersize=(4k,64k,4k)\nrd=rd1,wd=wd1\n"
    ));
    assert!(p[0].2.contains("(min,max,align)"), "{p:?}");
}

#[test]
fn rdpct_is_the_read_share() {
    let i = ok(&format!("{SD}wd=wd1,sd=sd1,rdpct=25\nrd=rd1,wd=wd1\n"));
    assert_eq!(stream(&i).read_pct, Some(25.0));
    let p = refused(&format!("{SD}wd=wd1,sd=sd1,rdpct=101\nrd=rd1,wd=wd1\n"));
    assert_eq!((p[0].0, p[0].1.as_str()), (2, "rdpct"));
}

#[test]
fn seekpct_takes_percentages_and_words() {
    for (v, want) in [
        ("30", 30.0),
        ("0", 0.0),
        ("seq", 0.0),
        ("sequential", 0.0),
        ("random", 100.0),
        ("eof", 0.0),
        ("100", 100.0),
    ] {
        let i = ok(&format!("{SD}wd=wd1,sd=sd1,seekpct={v}\nrd=rd1,wd=wd1\n"));
        assert_eq!(stream(&i).random_pct, Some(want), "seekpct={v}");
    }
    let i = ok(&format!("{SD}wd=wd1,sd=sd1,seekpct=eof\nrd=rd1,wd=wd1\n"));
    assert!(
        i.notices.iter().any(|n| n.contains("seekpct=eof")),
        "{:?}",
        i.notices
    );
    let p = refused(&format!("{SD}wd=wd1,sd=sd1,seekpct=often\nrd=rd1,wd=wd1\n"));
    assert_eq!(p[0].1, "seekpct");
}

#[test]
fn skew_weighs_the_wds_on_the_same_sds() {
    let i = ok(&format!(
        "{SD}wd=wd1,sd=sd1,rdpct=100,skew=70\nwd=wd2,sd=sd1,rdpct=0\nrd=rd1,wd=(wd1,wd2)\n"
    ));
    let w: Vec<Option<i64>> = i.steps[0].raw.streams.iter().map(|s| s.weight).collect();
    assert_eq!(
        w,
        vec![Some(7000), Some(3000)],
        "the wd without skew gets the rest"
    );
    let p = refused(&format!(
        "{SD}wd=wd1,sd=sd1,skew=70\nwd=wd2,sd=sd1,skew=50\nrd=rd1,wd=wd*\n"
    ));
    assert!(p[0].2.contains("120"), "{p:?}");
    assert_eq!((p[0].0, p[0].1.as_str()), (4, "skew"));
}

#[test]
fn wds_on_some_sds_drive_those_disks() {
    let i = ok("sd=sd1,lun=a\nsd=sd2,lun=b\nsd=sd3,lun=c\n\
                wd=wd1,sd=(sd1,sd2)\nwd=wd2,sd=sd3,rdpct=0\nrd=rd1,wd=all\n");
    let raw = &i.steps[0].raw;
    assert_eq!(raw.fleet.disks_per_worker, Some(3));
    assert_eq!(raw.streams[0].disks, Some(RawDisks::List(vec![0, 1])));
    assert_eq!(raw.streams[1].disks, Some(RawDisks::List(vec![2])));
    resolve(raw, &Overrides::default(), &Context { direct: true }).unwrap();
}

#[test]
fn hitarea_and_zero_hit_percentages_change_nothing_but_hits_are_refused() {
    let i = ok("sd=sd1,lun=a,hitarea=1m\nwd=wd1,sd=sd1,rhpct=0,whpct=0\nrd=rd1,wd=wd1\n");
    assert!(
        i.notices.iter().any(|n| n.contains("hitarea")),
        "{:?}",
        i.notices
    );
    let p = refused("sd=sd1,lun=a\nwd=wd1,sd=sd1,rhpct=50\nrd=rd1,wd=wd1\n");
    assert_eq!((p[0].0, p[0].1.as_str()), (2, "rhpct"));
}

#[test]
fn iorate_is_max_a_rate_or_a_step_per_rate() {
    let i = ok(&format!("{SD}wd=wd1,sd=sd1\nrd=rd1,wd=wd1,iorate=max\n"));
    assert_eq!(i.steps[0].raw.timing.rate_iops, None);
    let i = ok(&format!("{SD}wd=wd1,sd=sd1\nrd=rd1,wd=wd1,iorate=500\n"));
    assert_eq!(i.steps[0].raw.timing.rate_iops, Some(500.0));
    let i = ok(&format!(
        "{SD}wd=wd1,sd=sd1\nrd=rd1,wd=wd1,iorate=(100,200,300)\n"
    ));
    let r: Vec<Option<f64>> = i.steps.iter().map(|s| s.raw.timing.rate_iops).collect();
    assert_eq!(r, vec![Some(100.0), Some(200.0), Some(300.0)]);
    assert_eq!(i.steps[1].name, "rd1/iorate=200");
    let p = refused(&format!("{SD}wd=wd1,sd=sd1\nrd=rd1,wd=wd1,iorate=curve\n"));
    assert_eq!((p[0].0, p[0].1.as_str()), (3, "iorate"));
    assert!(p[0].2.contains("find-max"), "{p:?}");
}

#[test]
fn elapsed_warmup_and_interval_are_the_timing() {
    let i = ok(&format!(
        "{SD}wd=wd1,sd=sd1\nrd=rd1,wd=wd1,elapsed=10m,warmup=30,interval=5\n"
    ));
    let t = &i.steps[0].raw.timing;
    assert_eq!(t.duration.as_deref(), Some("10m"));
    assert_eq!(t.warmup.as_deref(), Some("30s"));
    assert_eq!(t.interval.as_deref(), Some("5s"));
    let p = refused(&format!("{SD}wd=wd1,sd=sd1\nrd=rd1,wd=wd1,elapsed=soon\n"));
    assert_eq!((p[0].0, p[0].1.as_str()), (3, "elapsed"));
}

#[test]
fn for_loops_make_one_step_per_combination() {
    let i = ok(&format!(
        "{SD}wd=wd1,sd=sd1\nrd=rd1,wd=wd1,forxfersize=(4k,8k),forrdpct=(0,100),forthreads=(1,2,4)\n"
    ));
    assert_eq!(i.steps.len(), 12);
    let first = &i.steps[0].raw;
    assert_eq!(first.streams[0].bs.as_deref(), Some("4096"));
    assert_eq!(first.streams[0].read_pct, Some(0.0));
    assert_eq!(first.fleet.threads_per_disk, Some(1));
    assert_eq!(i.steps[0].name, "rd1/xfersize=4k,rdpct=0,threads=1");
    let last = &i.steps[11].raw;
    assert_eq!(last.streams[0].bs.as_deref(), Some("8192"));
    assert_eq!(last.streams[0].read_pct, Some(100.0));
    assert_eq!(last.fleet.threads_per_disk, Some(4));
    // Names are distinct.
    let mut names: Vec<&str> = i.steps.iter().map(|s| s.name.as_str()).collect();
    names.dedup();
    assert_eq!(names.len(), 12);
    let p = refused(&format!(
        "{SD}wd=wd1,sd=sd1\nrd=rd1,wd=wd1,forrdpct=(0,150)\n"
    ));
    assert_eq!(p[0].1, "forrdpct");
}

#[test]
fn each_rd_is_a_step() {
    let i = ok(&format!(
        "{SD}wd=wd1,sd=sd1,rdpct=100\nwd=wd2,sd=sd1,rdpct=0\nrd=reads,wd=wd1\nrd=writes,wd=wd2\n"
    ));
    let n: Vec<&str> = i.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(n, vec!["reads", "writes"]);
    assert_eq!(i.steps[1].raw.streams[0].read_pct, Some(0.0));
    assert_eq!(i.steps[1].at.line, 5);
}

#[test]
fn wildcards_match_names() {
    let i = ok("sd=disk1,lun=a\nsd=disk2,lun=b\nsd=other,lun=c\n\
                wd=wd_a,sd=disk*\nwd=wd_b,sd=other\nrd=rd1,wd=wd_*\n");
    assert_eq!(i.steps[0].raw.streams.len(), 2);
    assert_eq!(
        i.steps[0].raw.streams[0].disks,
        Some(RawDisks::List(vec![0, 1]))
    );
    let p = refused("sd=sd1,lun=a\nwd=wd1,sd=nope*\nrd=rd1,wd=wd1\n");
    assert_eq!((p[0].0, p[0].1.as_str()), (2, "sd"));
    assert!(p[0].2.contains("matches no definition"), "{p:?}");
}

#[test]
fn continuation_lines_and_comments() {
    let i = ok("* a comment\n# another\n/* and another\n\
                sd=sd1,\n   lun=/dev/sdb,   * trailing comment\n   threads=3\n\
                wd=wd1,sd=sd1   /* inline */\n  xfersize=16k,rdpct=10\n\
                rd=rd1,wd=wd1,\n  elapsed=7\n");
    let raw = &i.steps[0].raw;
    assert_eq!(raw.fleet.threads_per_disk, Some(3));
    assert_eq!(raw.streams[0].bs.as_deref(), Some("16384"));
    assert_eq!(raw.streams[0].read_pct, Some(10.0));
    assert_eq!(raw.timing.duration.as_deref(), Some("7s"));
    assert_eq!(i.luns, vec!["/dev/sdb".to_string()]);
}

#[test]
fn dedupe_and_compression_ratios_are_the_data() {
    let i = ok(&format!(
        "compratio=2\ndedupratio=3\ndedupunit=8k\n{SD}wd=wd1,sd=sd1\nrd=rd1,wd=wd1\n"
    ));
    let d = &i.steps[0].raw.data;
    assert_eq!((d.compress_ratio, d.dedupe_ratio), (Some(2.0), Some(3.0)));
    assert_eq!(d.dedupe_unit.as_deref(), Some("8192"));
}

#[test]
fn unknown_and_unsupported_parameters_are_named_with_their_line() {
    let p = refused(&format!(
        "{SD}wd=wd1,sd=sd1,bogus=1\nrd=rd1,wd=wd1,maxdata=10g\n"
    ));
    let got: Vec<(usize, &str)> = p.iter().map(|(l, k, _)| (*l, k.as_str())).collect();
    assert_eq!(got, vec![(2, "bogus"), (3, "maxdata")]);
    let e = read_text(
        &format!("{SD}wd=wd1,sd=sd1,bogus=1\nrd=rd1,wd=wd1\n"),
        "x.vdb",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("x.vdb:2: bogus"), "{e}");
    let p = refused("fsd=fsd1,anchor=/tmp\nsd=sd1,lun=a\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1\n");
    assert_eq!((p[0].0, p[0].1.as_str()), (1, "fsd"));
}

#[test]
fn syntax_errors_name_the_line() {
    for (text, line) in [
        ("sd=sd1,lun=(a\n", 1),
        ("sd=sd1,lun=a\nwd=wd1,sd=sd1,nonsense\n", 2),
        ("sd=sd1,lun=a)\n", 1),
        // A name defined twice (found by the fuzz target: two streams of one name).
        ("sd=sd1,lun=a\nwd=w,sd=sd1\nwd=w,sd=sd1\nrd=r,wd=w\n", 3),
        ("sd=sd1,lun=a\nsd=sd1,lun=b\nwd=w,sd=sd1\nrd=r,wd=w\n", 2),
    ] {
        match read_text(text, "t.vdb") {
            Err(VdbenchError::Syntax { at, .. }) => assert_eq!(at.line, line, "{text}"),
            other => panic!("{text}: {other:?}"),
        }
    }
    assert_eq!(read_text(SD, "t.vdb"), Err(VdbenchError::NoRuns));
    let e = read_text(
        "sd=sd1,lun=a\nwd=w,sd=sd1\nwd=w,sd=sd1\nrd=r,wd=w\n",
        "t.vdb",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("wd=w: defined again (first at line 2)"), "{e}");
    // Defaults may be given again: each sets what the definitions after it leave out.
    ok("sd=default,size=8m\nsd=sd1,lun=a\nsd=default,size=16m\nwd=w,sd=sd1\nrd=r,wd=w\n");
}

#[test]
fn loops_past_the_step_bound_are_refused() {
    let many: Vec<String> = (1..=40).map(|n| n.to_string()).collect();
    let list = many.join(",");
    let p = refused(&format!(
        "{SD}wd=wd1,sd=sd1\nrd=rd1,wd=wd1,forthreads=({list}),forrdpct=({list})\n"
    ));
    assert!(p[0].2.contains("1600 steps"), "{p:?}");
}

proptest! {
    /// Any text is read or refused, never a panic; what is read resolves or is refused
    /// by the profile's own checks.
    #[test]
    fn any_text_is_read_or_refused(text in "[a-z0-9=,()*/ \n.%_-]{0,200}") {
        if let Ok(i) = read_text(&text, "p.vdb") {
            for s in &i.steps {
                let _ = resolve(&s.raw, &Overrides::default(), &Context { direct: false });
            }
        }
    }

    /// A written workload comes back as written.
    #[test]
    fn a_written_workload_maps_to_its_values(
        disks in 1usize..12,
        threads in 1i64..64,
        bs_k in 1u64..1024,
        rdpct in 0u32..=100,
        seekpct in 0u32..=100,
        ws in 1u32..=100,
    ) {
        let mut text = String::new();
        for d in 1..=disks {
            text.push_str(&format!("sd=sd{d},lun=/dev/x{d},openflags=o_direct,range=(0,{ws}),threads={threads}\n"));
        }
        text.push_str(&format!("wd=wd1,sd=sd*,xfersize={bs_k}k,rdpct={rdpct},seekpct={seekpct}\nrd=run1,wd=wd1,iorate=max,elapsed=60\n"));
        let i = read_text(&text, "p.vdb").unwrap();
        let raw = &i.steps[0].raw;
        prop_assert_eq!(raw.fleet.disks_per_worker, Some(disks as i64));
        prop_assert_eq!(raw.fleet.threads_per_disk, Some(threads));
        let s = &raw.streams[0];
        prop_assert_eq!(s.bs.clone(), Some((bs_k * 1024).to_string()));
        prop_assert_eq!(s.read_pct, Some(f64::from(rdpct)));
        prop_assert_eq!(s.random_pct, Some(f64::from(seekpct)));
        prop_assert_eq!(s.working_set_pct, Some(f64::from(ws)));
    }
}
