#!/usr/bin/env bash
# Two iofleet builds on the same target, interleaved A B B A (BRIEF §7: medians of
# interleaved runs, never single runs). Prints one line per run: IOPS, read p99 (µs) and
# CPU µs per I/O. The target directory's files are filled once and reused.
#
#   OLD=/path/to/old/iofleet NEW=target/release/iofleet \
#     bash bench/ab_binaries.sh /var/tmp/iofab easy-run-4k100r --workers 1 --disks 1 --threads 1 --qd 16 --disk-size 1g
set -euo pipefail
: "${OLD:?set OLD to the baseline iofleet binary}" "${NEW:?set NEW to the iofleet binary under test}"
target=$1
shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for which in OLD NEW NEW OLD; do
  "${!which}" run "$@" --target "$target" --warmup 2s --duration 8s --no-save --quiet --json >"$out"
  python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))['summary']
print(sys.argv[2], round(s['all']['iops']), round(s['read']['latency_us']['p99'], 1), round(s['cpu']['us_per_io'], 2))
" "$out" "$which"
done
