use iofleet_profile::raw::RawStream;
use iofleet_profile::{resolve, Context, Overrides};
use proptest::prelude::*;

use super::*;

/// A configuration file in Iometer 1.1.0's layout: the test setup, the access
/// specifications `specs` (each a name, assignment and lines as written) and, when
/// `workers` is given, one manager with that many disk workers, each with `targets`
/// targets, `oio` outstanding I/Os, `sectors` as its maximum disk size and `assigned`.
struct File<'a> {
    run_time: &'a str,
    ramp: u32,
    test_type: &'a str,
    queue_cycling: &'a str,
    specs: Vec<(&'a str, &'a str, Vec<String>)>,
    workers: Option<u32>,
    targets: u32,
    oio: u32,
    sectors: u64,
    assigned: Vec<&'a str>,
    /// Each worker its own targets (else every worker names the same ones).
    own_targets: bool,
}

impl Default for File<'_> {
    fn default() -> Self {
        File {
            run_time: "0          0          30",
            ramp: 5,
            test_type: "NORMAL",
            queue_cycling: "1          32         2          EXPONENTIAL",
            specs: vec![("db", "NONE", vec!["8192,100,67,100,0,1,0,0".into()])],
            workers: Some(2),
            targets: 1,
            oio: 16,
            sectors: 0,
            assigned: vec!["db"],
            own_targets: false,
        }
    }
}

impl File<'_> {
    fn text(&self) -> String {
        let mut t = String::from("Version 1.1.0 \n");
        t.push_str("'TEST SETUP ====================================================================\n'Test Description\n\tunit test\n");
        t.push_str(&format!(
            "'Run Time\n'\thours      minutes    seconds\n\t{}\n",
            self.run_time
        ));
        t.push_str(&format!("'Ramp Up Time (s)\n\t{}\n'Default Disk Workers to Spawn\n\tNUMBER_OF_CPUS\n'Default Network Workers to Spawn\n\t0\n'Record Results\n\tALL\n", self.ramp));
        t.push_str("'Worker Cycling\n'\tstart      step       step type\n\t1          1          LINEAR\n'Disk Cycling\n'\tstart      step       step type\n\t1          1          LINEAR\n");
        t.push_str(&format!("'Queue Depth Cycling\n'\tstart      end        step       step type\n\t{}\n'Test Type\n\t{}\n'END test setup\n", self.queue_cycling, self.test_type));
        t.push_str("'RESULTS DISPLAY ===============================================================\n'Record Last Update Results,Update Frequency,Update Type\n\tDISABLED,1,WHOLE_TEST\n'Bar chart 1 statistic\n\tTotal I/Os per Second\n'END results display\n");
        t.push_str(
            "'ACCESS SPECIFICATIONS =========================================================\n",
        );
        for (name, assign, lines) in &self.specs {
            t.push_str(&format!("'Access specification name,default assignment\n\t{name},{assign}\n{SPEC_HEADING}\n"));
            for l in lines {
                t.push_str(&format!("\t{l}\n"));
            }
        }
        t.push_str("'END access specifications\n");
        if let Some(n) = self.workers {
            t.push_str("'MANAGER LIST ==================================================================\n'Manager ID, manager name\n\t1,HOST1\n'Manager network address\n\t\n");
            for w in 1..=n {
                t.push_str(&format!("'Worker\n\tWorker {w}\n'Worker type\n\tDISK\n'Default target settings for worker\n'Number of outstanding IOs,test connection rate,transactions per connection,use fixed seed,fixed seed value\n\t{},DISABLED,1,DISABLED,0\n'Disk maximum size,starting sector,Data pattern\n\t{},0,2\n'End default target settings for worker\n'Assigned access specs\n", self.oio, self.sectors));
                for a in &self.assigned {
                    t.push_str(&format!("\t{a}\n"));
                }
                t.push_str("'End assigned access specs\n'Target assignments\n");
                let owner = if self.own_targets { w } else { 0 };
                for d in 0..self.targets {
                    t.push_str(&format!(
                        "'Target\n\t{}: \"vol{owner}.{d}\"\n'Target type\n\tDISK\n'End target\n",
                        (b'E' + d as u8) as char
                    ));
                }
                t.push_str("'End target assignments\n'End worker\n");
            }
            t.push_str("'End manager\n'END manager list\n");
        }
        t.push_str("Version 1.1.0 \n");
        t
    }
}

fn ok(f: &File<'_>) -> IometerImport {
    let text = f.text();
    read_text(&text, "t.icf", &[]).unwrap_or_else(|e| panic!("{text}\n{e}"))
}

/// The settings refused, as (line, setting, message).
fn refused(text: &str) -> Vec<(usize, String, String)> {
    match read_text(text, "t.icf", &[]) {
        Err(IometerError::Unsupported(p)) => p
            .into_iter()
            .map(|p| (p.at.line, p.parameter, p.message))
            .collect(),
        other => panic!("{text}\nnot refused by setting: {other:?}"),
    }
}

fn syntax(text: &str) -> (usize, String) {
    match read_text(text, "t.icf", &[]) {
        Err(IometerError::Syntax { at, message }) => (at.line, message),
        other => panic!("{text}\nnot a syntax error: {other:?}"),
    }
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

fn spec(lines: &[&str]) -> File<'static> {
    File {
        specs: vec![("s", "NONE", lines.iter().map(|l| l.to_string()).collect())],
        assigned: vec!["s"],
        ..File::default()
    }
}

fn stream(i: &IometerImport) -> &RawStream {
    &i.steps[0].raw.streams[0]
}

#[test]
fn a_manager_is_a_worker_and_its_iometer_workers_share_each_target_as_threads() {
    // Three Iometer workers, each on the same two targets: one iofleet worker (the
    // manager) with two disks, each driven by three threads at the workers' 8 OIO.
    let i = ok(&File {
        workers: Some(3),
        targets: 2,
        oio: 8,
        sectors: 8 * 1024 * 1024 * 2,
        ..File::default()
    });
    let f = &i.steps[0].raw.fleet;
    assert_eq!(f.workers, Some(1));
    assert_eq!(f.disks_per_worker, Some(2));
    assert_eq!(f.threads_per_disk, Some(3));
    assert_eq!(f.qd, Some(8));
    // 16 Mi sectors of 512 bytes: 8 GiB.
    assert_eq!(f.disk_size.as_deref(), Some("8589934592"));
    assert_eq!(i.targets, ["E: \"vol0.0\"", "F: \"vol0.1\""]);
}

#[test]
fn workers_on_targets_of_their_own_are_a_disk_each_with_one_thread() {
    let i = ok(&File {
        workers: Some(4),
        targets: 1,
        own_targets: true,
        ..File::default()
    });
    let f = &i.steps[0].raw.fleet;
    assert_eq!(f.workers, Some(1));
    assert_eq!(f.disks_per_worker, Some(4));
    assert_eq!(f.threads_per_disk, Some(1));
    assert_eq!(f.qd, Some(16));
    assert_eq!(i.targets.len(), 4);
}

#[test]
fn targets_driven_by_different_numbers_of_workers_are_refused() {
    let mut text = File {
        workers: Some(2),
        targets: 2,
        ..File::default()
    }
    .text();
    // The second worker drops its second target.
    let block = "'Target\n\tF: \"vol0.1\"\n'Target type\n\tDISK\n'End target\n";
    let last = text.rfind(block).unwrap();
    text.replace_range(last..last + block.len(), "");
    let p = refused(&text);
    assert_eq!(p[0].1, "Target assignments", "{p:?}");
    assert_eq!(p[0].0, line_of(&text, "1,HOST1"));
}

#[test]
fn disk_maximum_size_zero_leaves_the_disk_size_to_iofleet() {
    let i = ok(&File::default());
    assert_eq!(i.steps[0].raw.fleet.disk_size, None);
}

#[test]
fn size_reads_random_and_align_map_to_the_stream() {
    let i = ok(&spec(&["4096,100,70,80,0,1,4096,0"]));
    let s = stream(&i);
    assert_eq!(s.bs.as_deref(), Some("4096"));
    assert_eq!(s.read_pct, Some(70.0));
    assert_eq!(s.random_pct, Some(80.0));
    assert_eq!(s.align.as_deref(), Some("4096"));
    assert_eq!(s.weight, None);
}

#[test]
fn align_zero_is_sector_alignment() {
    let i = ok(&spec(&["8192,100,67,100,0,1,0,0"]));
    assert_eq!(stream(&i).align.as_deref(), Some("512"));
}

#[test]
fn a_size_mix_of_one_direction_is_one_stream_of_weighted_sizes() {
    let i = ok(&spec(&[
        "512,10,80,100,0,1,0,0",
        "4096,60,80,100,0,1,0,0",
        "65536,30,80,100,0,1,0,0",
    ]));
    assert_eq!(i.steps[0].raw.streams.len(), 1);
    assert_eq!(stream(&i).bs.as_deref(), Some("512:10,4096:60,65536:30"));
}

#[test]
fn lines_of_different_mixes_are_weighted_streams() {
    let i = ok(&spec(&["8192,75,100,100,0,1,0,0", "65536,25,0,0,0,1,0,0"]));
    let s = &i.steps[0].raw.streams;
    assert_eq!(s.len(), 2);
    assert_eq!((s[0].weight, s[1].weight), (Some(75), Some(25)));
    assert_eq!((s[0].read_pct, s[1].read_pct), (Some(100.0), Some(0.0)));
    assert_eq!(s[1].bs.as_deref(), Some("65536"));
}

#[test]
fn percentages_must_add_up_to_100() {
    let f = spec(&["4096,60,100,0,0,1,0,0", "8192,30,100,0,0,1,0,0"]);
    let p = refused(&f.text());
    assert!(
        p.iter()
            .any(|(_, k, m)| k == "% of size" && m.contains("90%")),
        "{p:?}"
    );
}

#[test]
fn percentages_above_100_are_refused_on_their_line() {
    let f = spec(&["4096,100,101,0,0,1,0,0"]);
    let text = f.text();
    let p = refused(&text);
    assert_eq!(p[0].0, line_of(&text, "4096,100,101"), "{p:?}");
    assert_eq!(p[0].1, "% reads");
}

#[test]
fn a_zero_percent_line_is_left_out_with_a_notice() {
    let i = ok(&spec(&["4096,100,100,0,0,1,0,0", "8192,0,0,0,0,1,0,0"]));
    assert_eq!(i.steps[0].raw.streams.len(), 1);
    assert!(
        i.notices.iter().any(|n| n.contains("0% of size")),
        "{:?}",
        i.notices
    );
}

#[test]
fn a_reply_is_refused_with_its_reason() {
    let f = spec(&["4096,100,100,0,0,1,0,512"]);
    let text = f.text();
    let p = refused(&text);
    assert_eq!(p[0].0, line_of(&text, "4096,100,100,0,0,1,0,512"));
    assert_eq!(p[0].1, "reply");
    assert!(p[0].2.contains("dependent"), "{p:?}");
}

#[test]
fn an_alignment_that_is_not_a_power_of_two_is_refused() {
    let p = refused(&spec(&["4096,100,100,100,0,1,3000,0"]).text());
    assert_eq!(p[0].1, "align");
}

#[test]
fn a_delay_caps_the_rate_per_worker() {
    let i = ok(&spec(&["4096,100,100,100,10,5,0,0"]));
    let t = &i.steps[0].raw.timing;
    // 5 I/Os every 10 ms: 500 a second.
    assert_eq!(t.rate_iops, Some(500.0));
    assert_eq!(t.arrival.as_deref(), Some("uniform"));
    assert!(
        i.notices.iter().any(|n| n.contains("delay 10 ms")),
        "{:?}",
        i.notices
    );
}

#[test]
fn different_delays_in_one_spec_are_refused() {
    let p = refused(&spec(&["4096,50,100,100,10,1,0,0", "8192,50,100,100,20,1,0,0"]).text());
    assert_eq!(p[0].1, "delay");
}

#[test]
fn bursts_without_delay_weigh_the_lines() {
    let i = ok(&spec(&[
        "4096,50,100,100,0,3,0,0",
        "8192,50,100,100,0,1,0,0",
    ]));
    assert_eq!(stream(&i).bs.as_deref(), Some("4096:150,8192:50"));
    assert!(
        i.notices.iter().any(|n| n.contains("burst")),
        "{:?}",
        i.notices
    );
}

#[test]
fn run_time_and_ramp_up_are_the_timing() {
    let i = ok(&File {
        run_time: "1          2          3",
        ramp: 30,
        ..File::default()
    });
    let t = &i.steps[0].raw.timing;
    assert_eq!(t.duration.as_deref(), Some("3723s"));
    assert_eq!(t.warmup.as_deref(), Some("30s"));
}

#[test]
fn run_time_zero_is_noticed_and_left_to_the_profile() {
    let i = ok(&File {
        run_time: "0          0          0",
        ..File::default()
    });
    assert_eq!(i.steps[0].raw.timing.duration, None);
    assert!(i.notices.iter().any(|n| n.contains("until stopped")));
}

#[test]
fn each_assigned_spec_is_a_step_in_order() {
    let i = ok(&File {
        specs: vec![
            ("a", "NONE", vec!["4096,100,100,0,0,1,0,0".into()]),
            ("b", "NONE", vec!["65536,100,0,0,0,1,0,0".into()]),
        ],
        assigned: vec!["b", "a"],
        ..File::default()
    });
    let names: Vec<&str> = i.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["b", "a"]);
    assert_eq!(i.specs, ["a", "b"]);
}

#[test]
fn only_runs_the_named_spec_and_refuses_an_unknown_one() {
    let f = File {
        specs: vec![
            ("a", "NONE", vec!["4096,100,100,0,0,1,0,0".into()]),
            ("b", "NONE", vec!["65536,100,0,0,0,1,0,0".into()]),
        ],
        assigned: vec!["a"],
        ..File::default()
    };
    let i = read_text(&f.text(), "t.icf", &["b".into()]).unwrap();
    assert_eq!(i.steps.len(), 1);
    assert_eq!(stream(&i).bs.as_deref(), Some("65536"));
    let e = read_text(&f.text(), "t.icf", &["c".into()]).unwrap_err();
    assert!(
        e.to_string().contains("no access specification named 'c'"),
        "{e}"
    );
}

#[test]
fn cycling_outstanding_ios_makes_a_step_per_queue_depth() {
    let i = ok(&File {
        test_type: "CYCLE_OUTSTANDING_IOS",
        queue_cycling: "1          32         2          EXPONENTIAL",
        ..File::default()
    });
    let qds: Vec<i64> = i.steps.iter().map(|s| s.raw.fleet.qd.unwrap()).collect();
    assert_eq!(qds, [1, 2, 4, 8, 16, 32]);
    assert_eq!(i.steps[2].name, "db/oio=4");
    let i = ok(&File {
        test_type: "CYCLE_OUTSTANDING_IOS",
        queue_cycling: "4          12         4          LINEAR",
        ..File::default()
    });
    let qds: Vec<i64> = i.steps.iter().map(|s| s.raw.fleet.qd.unwrap()).collect();
    assert_eq!(qds, [4, 8, 12]);
}

#[test]
fn cycling_workers_or_targets_is_refused_on_the_test_type_line() {
    let f = File {
        test_type: "CYCLE_TARGETS",
        ..File::default()
    };
    let text = f.text();
    let p = refused(&text);
    assert_eq!(p[0].0, line_of(&text, "CYCLE_TARGETS"));
    assert!(p[0].2.contains("sweep"), "{p:?}");
}

#[test]
fn workers_that_differ_are_refused() {
    let mut text = File::default().text();
    // The second worker's outstanding I/Os.
    let second = text.match_indices("\t16,DISABLED").nth(1).unwrap().0;
    text.replace_range(second..second + 3, "\t32");
    let p = refused(&text);
    assert!(
        p.iter().any(|(_, k, _)| k == "Number of outstanding IOs"),
        "{p:?}"
    );
}

#[test]
fn idle_workers_are_not_run() {
    let f = File {
        targets: 0,
        ..File::default()
    };
    let e = read_text(&f.text(), "t.icf", &[]).unwrap_err();
    assert!(matches!(e, IometerError::NoSteps(_)), "{e}");
}

#[test]
fn test_connection_rate_is_refused() {
    let text = File::default()
        .text()
        .replace("16,DISABLED,1", "16,ENABLED,1");
    let p = refused(&text);
    assert_eq!(p[0].1, "test connection rate");
}

#[test]
fn a_network_worker_is_refused() {
    let text =
        File::default()
            .text()
            .replacen("'Worker type\n\tDISK", "'Worker type\n\tNETWORK,TCP", 1);
    let p = refused(&text);
    assert_eq!(p[0].1, "Worker type");
}

#[test]
fn without_a_manager_list_the_default_assigned_specs_run_on_one_disk() {
    let i = ok(&File {
        workers: None,
        specs: vec![
            ("a", "ALL", vec!["4096,100,100,0,0,1,0,0".into()]),
            ("n", "NET", vec!["4096,100,100,0,0,1,0,0".into()]),
        ],
        ..File::default()
    });
    assert_eq!(i.steps.len(), 1);
    let f = &i.steps[0].raw.fleet;
    assert_eq!((f.workers, f.disks_per_worker), (Some(1), Some(1)));
    assert_eq!((f.threads_per_disk, f.qd), (Some(1), Some(1)));
}

#[test]
fn the_version_line_is_checked() {
    let text = File::default().text();
    let (line, m) = syntax(&text.replacen("Version 1.1.0", "Iometer", 1));
    assert_eq!(line, 1);
    assert!(m.contains("Version"), "{m}");
    let p = refused(&text.replacen("Version 1.1.0", "Version 1998.01.05", 1));
    assert_eq!((p[0].0, p[0].1.as_str()), (1, "Version"));
    let p = refused(&text.replacen("Version 1.1.0", "Version 7.0.0", 1));
    assert_eq!(p[0].1, "Version");
    let dated = text.replacen("Version 1.1.0", "Version 2006.07.27", 1);
    assert!(read_text(&dated, "t.icf", &[]).is_ok());
    let post = text.replacen("Version 1.1.0", "Version 2003.12.16-post", 1);
    assert!(read_text(&post, "t.icf", &[]).is_ok());
}

#[test]
fn an_unknown_line_names_its_line() {
    let text = File::default()
        .text()
        .replace("'Record Results", "'Record Everything");
    let p = refused(&text);
    assert_eq!(p[0].0, line_of(&text, "'Record Everything"));
    let text = File::default().text().replace(
        "'END access specifications",
        "garbage\n'END access specifications",
    );
    let (line, m) = syntax(&text);
    assert_eq!(line, line_of(&text, "garbage"));
    assert!(m.contains("8 numbers"), "{m}");
}

#[test]
fn a_missing_end_line_is_a_syntax_error() {
    let text = File::default().text();
    let cut = &text[..text.find("'END test setup").unwrap()];
    let (_, m) = syntax(cut);
    assert!(m.contains("'END line is missing"), "{m}");
}

#[test]
fn windows_line_ends_and_a_byte_order_mark_read() {
    let text = format!("\u{feff}{}", File::default().text().replace('\n', "\r\n"));
    let i = read_text(&text, "t.icf", &[]).unwrap();
    assert_eq!(stream(&i).bs.as_deref(), Some("8192"));
}

#[test]
fn a_spec_line_with_a_trailing_comma_reads() {
    let i = ok(&spec(&["4096,100,100,0,0,1,0,0,"]));
    assert_eq!(stream(&i).bs.as_deref(), Some("4096"));
}

#[test]
fn every_step_resolves() {
    let i = ok(&File {
        sectors: 32768,
        ..File::default()
    });
    for s in &i.steps {
        resolve(&s.raw, &Overrides::default(), &Context { direct: true }).unwrap();
    }
}

proptest! {
    /// Any text is read or refused, never a panic.
    #[test]
    fn any_text_is_read_or_refused(text in "(Version 1.1.0\n)?['A-Za-z0-9 ,=\t\n.]{0,300}") {
        if let Ok(i) = read_text(&text, "p.icf", &[]) {
            for s in &i.steps {
                let _ = resolve(&s.raw, &Overrides::default(), &Context { direct: false });
            }
        }
    }

    /// A specification written from its parts reads back as those parts.
    #[test]
    fn a_written_spec_reads_back(
        workers in 1u32..8,
        targets in 1u32..4,
        oio in 1u32..256,
        sizes in proptest::collection::vec(0u32..8, 1..5),
        reads in 0i64..=100,
        random in 0i64..=100,
        align_log in 9u32..16,
    ) {
        // Distinct sizes (512 << k), sharing 100% as evenly as whole numbers allow.
        let mut ks = sizes.clone();
        ks.sort_unstable();
        ks.dedup();
        let n = ks.len() as i64;
        let lines: Vec<String> = ks
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let pct = 100 / n + i64::from((i as i64) < 100 % n);
                format!("{},{pct},{reads},{random},0,1,{},0", 512u64 << k, 1u64 << align_log)
            })
            .collect();
        let f = File {
            workers: Some(workers),
            targets,
            oio,
            specs: vec![("p", "NONE", lines.clone())],
            assigned: vec!["p"],
            ..File::default()
        };
        let i = read_text(&f.text(), "p.icf", &[]).unwrap();
        let raw = &i.steps[0].raw;
        prop_assert_eq!(raw.fleet.workers, Some(1));
        prop_assert_eq!(raw.fleet.disks_per_worker, Some(i64::from(targets)));
        prop_assert_eq!(raw.fleet.threads_per_disk, Some(i64::from(workers)));
        prop_assert_eq!(raw.fleet.qd, Some(i64::from(oio)));
        prop_assert_eq!(raw.streams.len(), 1);
        let s = &raw.streams[0];
        prop_assert_eq!(s.read_pct, Some(reads as f64));
        prop_assert_eq!(s.random_pct, Some(random as f64));
        prop_assert_eq!(s.align.clone(), Some((1u64 << align_log).to_string()));
        let want: Vec<String> = lines
            .iter()
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                format!("{}:{}", f[0], f[1])
            })
            .collect();
        let bs = s.bs.clone().unwrap();
        if want.len() == 1 {
            prop_assert_eq!(bs, want[0].split(':').next().unwrap().to_string());
        } else {
            prop_assert_eq!(bs, want.join(","));
        }
    }
}
