//! The profile reference (docs/profiles.md), generated: the option table's rows, the
//! default shape of runs without a profile, the dry run's plan and the built-in profiles.
//!
//! It is the one place that prints the table for people; the table itself (`options`)
//! depends on nothing, so validation and `--help` read it without this text. Regenerate
//! the file with `cargo run -p iofleet -- profiles reference > docs/profiles.md`; a test
//! (`tests/reference.rs`) fails while the two differ.

use crate::flags::FLAGS_PROFILE;
use crate::options::{MAX_STREAMS, OPTIONS};

/// The profile reference (docs/profiles.md), generated from [`OPTIONS`] and the built-in
/// profiles. Regenerate the file with `cargo run -p iofleet -- profiles reference >
/// docs/profiles.md`.
pub fn reference_markdown() -> String {
    let mut out = String::new();
    out.push_str(REFERENCE_INTRO);
    let streams_about = format!(
        "One table per access pattern; at least one is required, and at most {MAX_STREAMS} \
         in a run (every worker group's together). The flags of stream keys apply to every \
         stream of the profile."
    );
    for (title, prefix, about) in [
        ("Top level", "", "Keys outside any table."),
        (
            "`[fleet]`",
            "fleet.",
            "The shape of the fleet. Every worker gets the same disks and threads. What the \
             whole fleet may add up to, and the memory a run checks it has, is under \
             *Seeing the resolved plan* below.",
        ),
        (
            "`[timing]`",
            "timing.",
            "Phases and reporting. A run is prepare, warm-up, measure.",
        ),
        (
            "`[data]`",
            "data.",
            "What writes (and a `random` prepare) put on the disks; see docs/data.md. \
             Record of the choice: the result's `run.plan.data`.",
        ),
        ("`[[stream]]`", "stream.", streams_about.as_str()),
    ] {
        out.push_str(&format!("\n## {title}\n\n{about}\n\n"));
        out.push_str("| key | CLI flag | type | default | range | description |\n");
        out.push_str("|---|---|---|---|---|---|\n");
        for o in OPTIONS.iter().filter(|o| {
            if prefix.is_empty() {
                !o.key.contains('.')
            } else {
                o.key.starts_with(prefix)
            }
        }) {
            let short = o.key.strip_prefix(prefix).unwrap_or(o.key);
            out.push_str(&format!(
                "| `{}` | {} | {} | {} | {} | {} |\n",
                short,
                o.flag.map(|f| format!("`{f}`")).unwrap_or_default(),
                cell(o.kind),
                o.default.map(default_cell).unwrap_or_default(),
                o.range.map(cell).unwrap_or_default(),
                cell(&o.description()),
            ));
        }
    }
    out.push_str(RUNS_WITHOUT_PROFILE);
    out.push_str(&format!("\n```toml\n{}```\n", FLAGS_PROFILE));
    out.push_str(DRY_RUN);
    out.push_str(
        "\n## Built-in profiles\n\nRun one with its name, show its TOML with \
         `iofleet profiles show NAME`. Fleets are scaled down to at most 2 GiB of disk per \
         profile; each description says what was scaled and where the parameters come \
         from.\n\n",
    );
    for name in crate::builtin::builtin_names() {
        let description = crate::load_builtin(name)
            .ok()
            .and_then(|p| p.description)
            .unwrap_or_default();
        let flat = description.split_whitespace().collect::<Vec<_>>().join(" ");
        out.push_str(&format!("- **{name}** — {flat}\n"));
    }
    out.push_str(VM_FLEET);
    out
}

const VM_FLEET: &str = r#"
### VM Fleet's sweeps

VM Fleet's core measurement runs its General, Peak, VDI and SQL workloads (the four
`vmfleet-*` profiles) as sweeps and searches; in iofleet each is a command, explained in
[campaigns.md](campaigns.md#vm-fleets-core-workload):

```sh
iofleet sweep vmfleet-general --vary read_pct=100,90,70   # write ratios 0, 10, 30%
iofleet sweep vmfleet-general --read-pct 90 --rate-curve  # IOPS against CPU, per ratio
iofleet run vmfleet-peak                                  # one unthrottled run
iofleet find-max vmfleet-vdi --slo 'cpu<=40%' --slo 'read.mean<=3ms' --slo 'write.mean<=3ms'
iofleet find-max vmfleet-sql --slo 'cpu<=40%' --slo 'read.mean<=3ms' --slo 'write.mean<=3ms'
```
"#;

/// TOML literals (`"1g"`, `100`) as code; prose defaults ("fleet.qd") as text.
fn default_cell(d: &str) -> String {
    if d.starts_with('"') || d.starts_with(|c: char| c.is_ascii_digit()) {
        cell(&format!("`{d}`"))
    } else {
        cell(d)
    }
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

const RUNS_WITHOUT_PROFILE: &str = r#"
## Runs without a profile

`iofleet run` given no profile (and no `--group`) takes the workload from its flags, as
fio does: `iofleet run --bs 4k --read-pct 70 --random-pct 100 --qd 32`. The flags apply to
the default shape below exactly as they apply to any profile, with the same checks. At
least one of the flags of the CLI flag column above must be given; a bare `iofleet run`
is an error rather than a silent 60 s run. The run is named after its
workload, `cli-BS-readR-randomX-qdQ` (`mixed` for a block-size list), so stored runs of
different flag workloads are told apart. The default shape is one worker with one disk of
1 GiB driven by one thread at qd 1, 4 KiB random reads over the whole disk, a random fill
first, no warm-up and 60 s measured in 1 s intervals:
"#;

const DRY_RUN: &str = r#"
## Seeing the resolved plan: `--dry-run`

`iofleet run ... --dry-run` prints the plan a run would use as a profile with every key
written out (defaults, alignment, weights, each stream's disks), then the fleet layout
(workers per group, disks, lanes, outstanding I/O, engine, this host, its I/O threads and
the memory the plan needs, or each inventory host's share and its lanes) and the disk
files or device regions, as TOML comments. The lanes are counted, never built, so a dry
run of any size stays small. The
whole output is a profile: save it and run it with `iofleet run FILE` (with the same
`--target`; a device target sets the disk size again on each run). It makes every check a
run makes on this host, failing the same way (exit 2), and touches nothing: no target directory, no disk
file, no `--output` file, no results store, no SSH connection. With `--group` it prints one
profile per group, each under a `# ---- group NAME` line; save each part to its own file. At
most 32 files or regions are listed per target or host. On a directory target, `--engine
auto` is resolved as the run resolves it (io_uring, or psync on a filesystem without
non-blocking reads such as tmpfs); that check writes nothing.

### What a fleet may add up to, and the memory it needs

Each key has its range above; what several keys multiply to is checked too, before
anything is allocated, by the plan a run and a dry run share:

- The fleet's workers, every worker group's and an inventory's host pins together, are
  at most `fleet.workers`' bound (65536), as a single profile's are.
- The products (lanes = workers × disks × threads, I/Os in flight = lanes × qd, disk
  bytes = disks × disk size, buffer bytes = I/Os in flight × the largest block) are
  summed in checked arithmetic: one that would pass 2^64 is refused, naming the key.
- The memory the plan needs is estimated from the figures the run allocates by, and the
  run is refused (exit 2) when it is more than the host has available (`MemAvailable`
  of /proc/meminfo):

  | part | what it counts |
  |---|---|
  | I/O buffers | the largest block of each I/O in flight, and each I/O's slot (about 250 bytes with its ring entries) |
  | latency histograms | per disk, per stream and direction (read, write): a dense histogram sized for latencies up to 1 s (168 KiB), on each I/O thread that records the disk and once more in the collector |
  | lanes | the state of each lane (about 1.1 KiB) and each disk's place in the layout |
  | verify tables | 32 bytes per 4 KiB unit of every verified disk |
  | OS threads | 64 KiB each: the I/O threads, and with psync a thread per I/O in flight |
  | interval rows | per interval (at most 1,000,000), the fleet's row (about 0.9 KiB) and one per host and per group (about 0.5 KiB each) |
  | the process | 32 MiB |

  For example, `--workers 1000 --qd 4096 --bs 1m`: `error: the plan needs 4001.3 GiB
  for 1,000 lanes with 4,096,000 I/Os in flight; this host has 22.2 GiB available
  (MemAvailable). The largest part is the I/O buffers, 4001.0 GiB (the largest block
  for each I/O in flight): lower --qd (fleet.qd, stream.qd) or the block size (--bs,
  stream.bs)`. The estimate is what those parts reach when every histogram has seen
  latencies up to a second. Measured on a 2-CPU machine (peak RSS of a debug build):
  2,000 workers at qd 4 with log-normal latencies (median 200 µs, σ 1) peaked at 1.29
  GiB against an estimate of 1.3 GiB; with the null engine's narrow latencies, 1,000
  workers peaked at 293 MiB against 694 MiB. With `--hosts`, the controller checks
  its own part (the merged statistics: 16 KiB per histogram, which stay sparse as they
  arrive from the agents) and that of the agents it starts on this
  machine (`transport = "local"`); each agent checks its share again on its host
  before it allocates, and its refusal is the run's (exit 2, naming the host).
"#;

const REFERENCE_INTRO: &str = r#"# Profile reference

<!-- Generated from crates/profile/src/options.rs by
     `cargo run -p iofleet -- profiles reference > docs/profiles.md`. Do not edit. -->

A profile is a TOML file: the fleet shape, the timing, and one or more streams (access
patterns). Give a built-in profile by name or your own file by path (anything ending in
`.toml` or containing `/`). Most keys can be overridden on the command line; an error
always names the key (and the flag, if the value came from one) that fixes it.
Workloads written for other tools resolve to the same keys: fio job files
([fio.md](fio.md)) and DISKSPD command lines ([diskspd.md](diskspd.md), which also
sets `data.write_through` from `-Sw`/`-Sh`).

```toml
name = "my-oltp"
description = "8K 70/30 random data plus a sequential log"

[fleet]
workers = 2
disks_per_worker = 4
disk_size = "1g"
threads_per_disk = 2
qd = 8

[timing]
prepare = "random"
warmup = "5s"
duration = "60s"

[[stream]]
name = "data"
bs = "8k"
read_pct = 70
random_pct = 100
hot_bands = "95/5:4/10"
disks = "0-2"

[[stream]]
name = "log"
bs = "32k"
read_pct = 0
random_pct = 0
rate_iops = 300.0
qd = 1
disks = [3]
```

## Units

- **Sizes** are bytes with binary multiples for every suffix: `4096`, `4k` = `4KiB` =
  `4KB` = 4096, `1.5k` = 1536, `1m`, `10g`, `1t`.
- **Durations**: `500ms`, `10s`, `5m`, `1h`; a bare number is seconds.
- **Rates** (`rate_iops`) are IOPS **per worker**, spread over that worker's disks and
  threads. A fleet of 10 workers at `rate_iops = 100.0` issues 1000 IOPS in total.
- **Percentages** are 0 to 100 and may have decimals.

## How streams share a disk

Each disk of each worker is driven by `threads_per_disk` threads. On every thread:

- The **closed-loop** streams (those without their own `rate_iops`) share one lane of
  `fleet.qd` outstanding I/Os. Whenever a slot frees, the next I/O's stream is picked at
  random in proportion to `weight`. `timing.rate_iops`, if set, caps that lane; otherwise
  it runs as fast as the storage allows.
- Every **rated** stream (`rate_iops` set) gets a lane of its own with its own `qd`
  (default `fleet.qd`). It is open loop: I/Os are due at times drawn from
  `timing.arrival` (Poisson or uniform) regardless of completions, and latency is
  measured from the intended issue time, so a slow system is not allowed to hide its
  queueing delay (no coordinated omission). `weight` and `rate_iops` are mutually
  exclusive.

## Where offsets land

- `random_pct` of the I/Os go to a random offset aligned to `align` inside the
  working set (the first `working_set_pct` percent of the disk); the others continue a
  **sequential cursor** kept per thread, wrapping at the end of the working set. The
  threads of a disk start their cursors at evenly spaced offsets.
- `hot_bands = "95/5:4/10"` (DISKSPD's notation): 95% of the random I/Os fall uniformly
  in the first 5% of the working set, 4% in the next 10%, and the remaining 1% uniformly
  in the remaining 85%. Bands are consecutive from the start; the io% and range% sums may
  not exceed 100 each.
- `zipf = 1.1`: random offsets follow a Zipf distribution with exponent theta over the
  blocks of the working set; block 0 is the hottest and popularity falls with the block
  index, so the hot data is contiguous at the start of the working set.
- Without either, every aligned block is equally likely.
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_has_every_key_and_profile() {
        let md = reference_markdown();
        for o in OPTIONS {
            let short = o.key.rsplit('.').next().unwrap();
            assert!(md.contains(&format!("| `{short}` |")), "{} missing", o.key);
        }
        for name in crate::builtin::builtin_names() {
            assert!(md.contains(&format!("**{name}**")), "{name} missing");
        }
        assert!(
            md.contains("`enum: random\\|zero\\|none`")
                || md.contains("enum: random\\|zero\\|none")
        );
    }
}
