#!/bin/sh
# Benchmark: the recorder's own cost. Runs `memdoctor record` at its
# defaults (15 s, top 50 processes) for DURATION seconds and reports its CPU
# as a share of one core, its peak RSS, and the store's growth.
#
# usage: bench/record.sh [SECONDS]     (default 300; root recommended)
set -eu
secs=${1:-300}
cd "$(dirname "$0")/.."
make -s build
dir=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
./memdoctor record --db "$dir/md.db" --listen '' --interval 15s --top 50 2>"$dir/log" &
pid=$!
sleep 1
tck=$(getconf CLK_TCK)
read_cpu() { awk -v t="$tck" '{ print ($14 + $15) / t }' "/proc/$pid/stat"; }
c0=$(read_cpu); t0=$(date +%s.%N)
sleep "$secs"
c1=$(read_cpu); t1=$(date +%s.%N)
hwm=$(awk '/VmHWM/ {print $2}' /proc/$pid/status)
rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
kill -TERM $pid; wait $pid 2>/dev/null || true
size=$(du -b "$dir"/md.db* | awk '{s+=$1} END {print s}')
python3 - "$c0" "$c1" "$t0" "$t1" "$hwm" "$rss" "$size" "$secs" <<'PY'
import sys
c0, c1, t0, t1, hwm, rss, size, secs = map(float, sys.argv[1:])
cpu = (c1 - c0) / (t1 - t0)
print(f"memdoctor record, 15 s interval, top 50 processes, {secs:.0f} s")
print(f"CPU: {100*cpu:.3f}% of one core (goal < 1%)")
print(f"RSS: peak {hwm/1024:.1f} MiB, now {rss/1024:.1f} MiB (goal < 25 MiB)")
print(f"store after {secs:.0f} s: {size/1024:.0f} KiB")
PY
