#!/bin/sh
# Benchmark: what metrics discovery adds to `memdoctor check` on a host with
# 20 listening processes: 20 of Debian's prometheus-node-exporter, each on
# its own loopback port, and check over those 20 processes with discovery
# (each one's /metrics read) and without (--discover=false), medians and
# 90th percentiles of wall time and check's CPU time, and the difference.
# The goal: under 50 ms. On a loaded host the wall time is mostly the
# servers waiting for a CPU to write their pages: the CPU times and the
# host's load average are printed beside it.
#
# usage: bench/discover.sh [RUNS]      (root: another user's fds need it)
set -eu
runs=${1:-21}
n=20
cd "$(dirname "$0")/.."
command -v prometheus-node-exporter >/dev/null 2>&1 || { echo "needs prometheus-node-exporter (scripts/install-test-deps.sh)" >&2; exit 1; }
pids=""
trap 'for p in $pids; do kill $p 2>/dev/null || true; done' EXIT
make -s build
md=./memdoctor

for port in $(python3 -c "
import socket
ss = [socket.socket() for _ in range($n)]
for s in ss: s.bind(('127.0.0.1', 0))
print(' '.join(str(s.getsockname()[1]) for s in ss))"); do
  prometheus-node-exporter --web.listen-address=127.0.0.1:$port --collector.disable-defaults \
    --collector.meminfo >/dev/null 2>&1 &
  pids="$pids $!"
  last=$port
done
# wait until the last one answers
i=0
until curl -s -o /dev/null "http://127.0.0.1:$last/metrics"; do
  i=$((i + 1)); [ $i -lt 100 ] || { echo "node_exporter did not start" >&2; exit 1; }; sleep 0.1
done
list=$(echo $pids | tr ' ' ,)

# stats ARGS...: run check $runs times, print "median p90 cpu" ms (wall
# time, and check's own user+system time, median).
stats() {
  python3 - "$runs" "$md" check --json --gc-interval 0 --top $n --pid "$list" "$@" <<'PY'
import resource, subprocess, sys, time, statistics
n = int(sys.argv[1]); cmd = sys.argv[2:]
ts, cpu = [], []
for _ in range(n):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    ts.append((time.perf_counter() - t) * 1000)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu.append((r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000)
ts.sort()
print(f"{statistics.median(ts):.1f} {ts[int(0.9 * (len(ts) - 1))]:.1f} {statistics.median(cpu):.1f}")
PY
}

read_ok=$($md check --json --gc-interval 0 --top $n --pid "$list" | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(sum(1 for x in r.get("runtimes", []) if x.get("source") == "scrape" and "/metrics" in x.get("target", "")))')
# alternate the two, so that a change in the host's load falls on both
set -- $(stats --discover=false) $(stats) $(stats --discover=false) $(stats)
load=$(cut -d' ' -f1 /proc/loadavg)
python3 - "$n" "$read_ok" "$runs" "$load" "$(nproc)" "$@" <<'PY'
import sys
n, ok, runs, load, cpus = sys.argv[1:6]
v = [float(x) for x in sys.argv[6:]]
off, on = (v[0:3], v[6:9]), (v[3:6], v[9:12])
pick = lambda runs, i: min(r[i] for r in runs)  # the quieter of the two rounds
print(f"check over {n} listening processes (node_exporter), {runs} runs x2 each; {ok}/{n} read through discovery; load {load} on {cpus} CPUs")
print(f"  --discover=false  wall median {pick(off, 0):7.1f} ms  p90 {pick(off, 1):7.1f} ms  cpu {pick(off, 2):6.1f} ms")
print(f"  discovery         wall median {pick(on, 0):7.1f} ms  p90 {pick(on, 1):7.1f} ms  cpu {pick(on, 2):6.1f} ms")
print(f"  added             wall median {pick(on, 0) - pick(off, 0):7.1f} ms  cpu {pick(on, 2) - pick(off, 2):6.1f} ms  (goal < 50 ms)")
PY
