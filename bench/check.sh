#!/bin/sh
# Benchmark: `memdoctor check` on this host against the raw cost of reading
# the same files, node_exporter's scrape with the equivalent collectors, and
# smem for the per-process part, in one run, as ratios.
#
# usage: bench/check.sh [RUNS]      (root recommended: slabinfo, every smaps)
set -eu
runs=${1:-21}
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'kill $nepid 2>/dev/null || true; rm -rf "$out"' EXIT
nepid=""
make -s build
md=./memdoctor

# The exact files check reads: a capture lists them.
$md capture --top 10 -o "$out/c.txtar" 2>/dev/null
grep -a '^-- .* --$' "$out/c.txtar" | sed 's/^-- //; s/ --$//' | grep -v '/$' | grep -v '^memdoctor/' \
  | sed 's|^|/|' > "$out/files"
nfiles=$(wc -l < "$out/files")

# median_ms CMD...: run CMD $runs times, print the median wall time in ms.
median_ms() {
  python3 - "$runs" "$@" <<'PY'
import subprocess, sys, time, statistics
n = int(sys.argv[1]); cmd = sys.argv[2:]
ts = []
for _ in range(n):
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    ts.append((time.perf_counter() - t) * 1000)
print(f"{statistics.median(ts):.1f}")
PY
}

peak_kb() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1; }

t_md=$(median_ms $md check --json)
rss_md=$(peak_kb $md check --json)
t_cat=$(median_ms sh -c "xargs cat < $out/files > /dev/null 2>&1")
t_proc=$($md check --json | python3 -c 'import json,sys; c=json.load(sys.stdin)["cost"]["collectors_seconds"]; print("%.1f" % (c["processes"]*1000))')

t_ne="n/a"; rss_ne="n/a"
if command -v prometheus-node-exporter >/dev/null 2>&1; then
  port=19199
  prometheus-node-exporter --web.listen-address=127.0.0.1:$port --collector.disable-defaults \
    --collector.meminfo --collector.vmstat --collector.vmstat.fields='.*' --collector.zoneinfo \
    --collector.slabinfo --collector.cgroups --collector.pressure --collector.stat --collector.cpu \
    --collector.uname --collector.sysctl --collector.sysctl.include=vm.min_free_kbytes \
    --collector.sysctl.include=vm.watermark_scale_factor --collector.processes >/dev/null 2>&1 &
  nepid=$!
  sleep 1
  curl -s -o /dev/null http://127.0.0.1:$port/metrics
  t_ne=$(median_ms curl -s -o /dev/null http://127.0.0.1:$port/metrics)
  rss_ne=$(awk '/VmHWM/ {print $2}' /proc/$nepid/status)
fi
t_smem="n/a"
command -v smem >/dev/null 2>&1 && t_smem=$(median_ms smem -c "pid uss pss rss")

python3 - "$t_md" "$rss_md" "$t_cat" "$t_ne" "$rss_ne" "$t_smem" "$t_proc" "$nfiles" "$runs" <<'PY'
import sys
md, rss, cat, ne, rss_ne, smem, proc, nfiles, runs = sys.argv[1:]
def ratio(a, b):
    try: return f"{float(a)/float(b):.2f}x"
    except: return "n/a"
print(f"memdoctor check on this host, median of {runs} runs ({nfiles} files read)")
print(f"{'what':52} {'median ms':>10} {'memdoctor/this':>15}")
print(f"{'memdoctor check --json (whole command)':52} {md:>10} {'1.00x':>15}")
print(f"{'cat of the same files to /dev/null':52} {cat:>10} {ratio(md, cat):>15}")
print(f"{'node_exporter scrape, equivalent collectors':52} {ne:>10} {ratio(md, ne):>15}")
print(f"{'memdoctor per-process collector (in the command)':52} {proc:>10} {'':>15}")
print(f"{'smem (per-process USS/PSS/RSS, all processes)':52} {smem:>10} {ratio(proc, smem):>15}")
print(f"peak RSS: memdoctor check {int(rss)/1024:.1f} MiB; node_exporter (resident daemon, VmHWM) {rss_ne if rss_ne=='n/a' else f'{int(rss_ne)/1024:.1f} MiB'}")
print("goals: median < 300 ms, peak RSS < 30 MiB")
PY
