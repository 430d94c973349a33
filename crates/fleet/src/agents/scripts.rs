//! The shell scripts the controller runs on a host, each over one session of the
//! host's transport: starting the agent (from a content-addressed copy, sent when the
//! host lacks it, and recording its process with the session's nonce), ending a frozen
//! agent by that record, and removing copies and records (`iofleet hosts clean`). Only
//! the text of the scripts lives here; running them is `session`'s.

use super::agent::RUN_DIR_ENV;

/// How one session's agent is started, and so found again on its host: the binary
/// (a shell word, as the start script names it) and the session's nonce, which names the
/// run's private directory on the host (`runs/NONCE` under `~/.cache/iofleet`, mode 700)
/// and is in the agent's environment (`IOFLEET_RUN_DIR`).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Launch {
    pub(super) exe: String,
    pub(super) nonce: String,
}

impl Launch {
    /// A fresh nonce (128 random bits, from the operating system's generator through
    /// `rand`'s thread generator) for the agent `exe` names.
    pub(super) fn new(exe: String) -> Self {
        Launch {
            exe,
            nonce: format!("{:032x}", rand::random::<u128>()),
        }
    }
}

/// Shell lines that remove the run directories under `$runs` whose agent is gone: over
/// 10 minutes old (a younger one may be another run's, made just before its agent
/// starts) and no process carries their mark.
pub(super) fn stale_records_lines() -> String {
    format!(
        r#"for o in "$runs"/*; do
  [ -d "$o" ] && [ -n "$(find "$o" -maxdepth 0 -mmin +10 2>/dev/null)" ] || continue
  q="$(cat "$o/pid" 2>/dev/null)"
  case $q in ''|*[!0-9]*) ;; *) tr '\0' '\n' < "/proc/$q/environ" 2>/dev/null | grep -qxF "{RUN_DIR_ENV}=$o" && continue ;; esac
  rm -rf "$o"
done
"#
    )
}

/// The start script's common part: remove stale run directories
/// (`stale_records_lines`), and define `launch BINARY`, which records this shell's
/// process id in the run's private directory, marks the environment with that
/// directory, and `exec`s the binary as the agent, so the recorded process is the
/// agent. A directory that cannot be made (a home that cannot be written, as on a
/// read-only or root-squashed share, or no `HOME` at all) does not stop the start: the
/// agent runs unrecorded, says so on stderr, and a frozen agent there can be ended only
/// with its session (the kill script finds no record and signals nothing).
pub(super) fn launch_lines(nonce: &str) -> String {
    format!(
        r#"runs="${{HOME:-/nonexistent}}/.cache/iofleet/runs"
{stale}launch() {{
  r="$runs/{nonce}"
  if {{ mkdir -p -m 700 "$runs" && mkdir -m 700 "$r" && echo $$ > "$r/pid"; }} 2>/dev/null; then
    {RUN_DIR_ENV}="$r"; export {RUN_DIR_ENV}
  else
    echo "iofleet: cannot record the agent's process in $r; a frozen agent on this host is ended only with its session" >&2
  fi
  exec "$1" agent
}}
"#,
        stale = stale_records_lines(),
    )
}

/// What the controller sends a host to start its agent when the binary is already
/// there: `exe` (a shell word), launched as `launch_lines` says.
pub(super) fn launch_script(launch: &Launch) -> String {
    format!("{}launch {}", launch_lines(&launch.nonce), launch.exe)
}

/// What the controller runs on a host, through a second connection, to end a frozen
/// agent: read the process id `launch_lines` recorded in the run's directory, and
/// signal it only if the host says that process runs the agent's binary (`/proc/PID/exe`
/// against the binary resolved there; or that path ` (deleted)`: the file was replaced
/// after the agent started, as a host sharing its home with another replaces a copy
/// both uploaded) and carries the run's mark in its environment. Nothing the agent said
/// is used. Prints `ended PID`, or why it did not signal; then removes the run's
/// directory.
pub(super) fn kill_script(launch: &Launch) -> String {
    format!(
        r#"r="$HOME/.cache/iofleet/runs/{nonce}"
x={exe}
case $x in */*) ;; *) x="$(command -v -- "$x")" ;; esac
want="$(readlink -f -- "$x" 2>/dev/null)"
pid="$(cat "$r/pid" 2>/dev/null)"
case $pid in
  ''|*[!0-9]*) echo "no process recorded in $r" ;;
  *) e="$(readlink "/proc/$pid/exe" 2>/dev/null)"
     if [ -z "$want" ] || {{ [ "$e" != "$want" ] && [ "$e" != "$want (deleted)" ]; }}; then
       echo "process $pid does not run $x"
     elif ! tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qxF "{RUN_DIR_ENV}=$r"; then
       echo "process $pid does not carry this run's mark"
     elif kill -KILL "$pid" 2>/dev/null; then
       echo "ended $pid"
     else
       echo "kill -KILL $pid failed"
     fi ;;
esac
rm -rf "$r""#,
        nonce = launch.nonce,
        exe = launch.exe,
    )
}

/// What the controller sends a host to start its agent from the copy `ship` holds,
/// `len` bytes with SHA-256 `digest` (hex). The copy is content-addressed
/// (`iofleet-<first 16 hex digits of its SHA-256>`) and stays between runs. One script,
/// one session, whether the host has the copy or not. It removes uploads abandoned over
/// 10 minutes ago (younger ones may be another run's upload in progress, on a shared
/// home) and copies of other versions that no process of this user runs and that were
/// not used for `KEEP_DAYS` days. Then, if the copy is there and its SHA-256 matches, it
/// touches it (its modification time says when it was last used) and launches it as the
/// agent (`launch_lines`). Otherwise it prints [`NEEDS_COPY`] and reads exactly `len`
/// bytes from the session into a temporary file (the controller sends nothing else until
/// the agent greets it), checks their SHA-256, renames them into place and launches them;
/// a copy that does not verify is removed and never run. `iofleet hosts clean` removes
/// every copy (`clean_script`). Returns the script and how it launches the agent.
pub(super) fn start_script(digest: &str, len: usize) -> (String, Launch) {
    let name = format!("iofleet-{}", &digest[..16]);
    let launch = Launch::new(format!("\"$HOME/.cache/iofleet/{name}\""));
    let keep_min = KEEP_DAYS * 24 * 60;
    let needs = std::str::from_utf8(NEEDS_COPY).expect("ASCII");
    let script = format!(
        r#"d="$HOME/.cache/iofleet"; p="$d/{name}"
find "$d" -maxdepth 1 -name '.upload.*' -mmin +10 -exec rm -f {{}} + 2>/dev/null
for f in "$d"/iofleet-*; do
  [ -e "$f" ] && [ "$f" != "$p" ] || continue
  [ -n "$(find "$f" -maxdepth 0 -mmin +{keep_min} 2>/dev/null)" ] || continue
  busy=no
  for e in /proc/[0-9]*/exe; do [ "$(readlink "$e" 2>/dev/null)" = "$f" ] && busy=yes && break; done
  [ $busy = no ] && rm -f "$f"
done
{lines}sum() {{ sha256sum "$1" 2>/dev/null | cut -d' ' -f1; }}
if [ -x "$p" ] && [ "$(sum "$p")" = "{digest}" ]; then
  touch -c "$p"; launch "$p"
fi
mkdir -p "$d" || exit 1
t="$d/.upload.$$"
printf '{needs}'
head -c {len} > "$t" || {{ rm -f "$t"; exit 1; }}
got="$(sum "$t")"
if [ "$got" = "{digest}" ] && chmod 755 "$t" && mv -f "$t" "$p"; then launch "$p"; fi
n="$(wc -c < "$t" 2>/dev/null)"
rm -f "$t"
echo "the copy received does not verify (${{n:-0}} of {len} bytes, SHA-256 ${{got:-none}}); it was removed" >&2
exit 1"#,
        lines = launch_lines(&launch.nonce),
    );
    (script, launch)
}

/// What the start script prints instead of the agent's greeting when the host has no
/// good copy; the controller then sends one on the same session.
pub(super) const NEEDS_COPY: &[u8; 8] = b"IOFLEET?";

/// Days a copy of another version stays on a host unused before a run removes it.
pub const KEEP_DAYS: u32 = 7;

/// Remove every iofleet copy that no process runs, and every upload whose writer (the
/// start script's shell, whose PID ends its name) is gone, in the host's
/// `~/.cache/iofleet`, then the directory if nothing else is in it (verify journals of the
/// user's runs stay). Prints what it removed and what it left, one line each (a file
/// another cleaner removed first is neither). The records of agents no longer running
/// (`stale_records_lines`) go too, without a line: they are not files the user keeps.
pub(super) fn clean_script() -> String {
    format!(
        r#"d="$HOME/.cache/iofleet"; [ -d "$d" ] || exit 0
for f in "$d"/iofleet-* "$d"/.upload.*; do
  [ -e "$f" ] || continue
  busy=no
  case "$f" in *"/.upload."*) w="${{f##*.upload.}}"; [ -n "$w" ] && [ -d "/proc/$w" ] && busy=yes;; esac
  [ $busy = yes ] || for e in /proc/[0-9]*/exe; do [ "$(readlink "$e" 2>/dev/null)" = "$f" ] && busy=yes && break; done
  if [ $busy = yes ]; then echo "in use $f"
  elif rm "$f" 2>/dev/null; then echo "removed $f"
  elif [ -e "$f" ]; then echo "cannot remove $f"; fi
done
runs="$d/runs"
{stale}rmdir "$runs" "$d" 2>/dev/null; true"#,
        stale = stale_records_lines(),
    )
}
