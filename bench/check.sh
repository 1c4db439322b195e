#!/bin/sh
# Benchmark: `memdoctor check --json` on this host against
#  - the raw cost of its reads: bench/rawread (C) replays, from an strace of
#    one check run, every file check opened, once, with the same reads into
#    one reusable buffer, nothing parsed (goal: check <= 1.3x);
#  - a node_exporter scrape (curl of /metrics) with the equivalent
#    collectors, on a loopback port of its own (goal: check <= 0.7x);
#  - smem for the per-process part.
# Runs are interleaved (check, raw reads, scrape, check, ...) so that a
# change in the host's load moves all three; medians of whole processes,
# wall and CPU (user + system of the child, from wait4), and peak RSS
# (GNU time, three more runs). node_exporter's CPU is its own, read from
# /proc between scrapes (curl's is curl's).
#
# usage: bench/check.sh [RUNS]      (root: slabinfo, every smaps, map_files)
# Environment: BIN=path measures that binary instead of building ./memdoctor.
set -eu
runs=${1:-21}
cd "$(dirname "$0")/.."
out=$(mktemp -d)
nepid=""
trap '[ -n "$nepid" ] && kill $nepid 2>/dev/null; rm -rf "$out"' EXIT
if [ -z "${BIN:-}" ]; then
	make -s build
	BIN=./memdoctor
fi
for t in strace cc python3 curl /usr/bin/time; do
	command -v $t >/dev/null 2>&1 || { echo "bench/check.sh needs $t (apt-get install strace gcc python3 curl time)" >&2; exit 1; }
done

# The raw-read yardstick: what one check run opened and read.
cc -O2 -o "$out/rawread" bench/rawread/rawread.c
strace -f -qq -y -s 0 -e trace=open,openat,read,pread64,getdents64 -o "$out/trace" "$BIN" check --json >/dev/null
mdpid=$(awk 'NR == 1 { print $1 }' "$out/trace")
python3 bench/rawread/plan.py "$out/trace" "$mdpid" >"$out/plan" 2>"$out/plan.log"
sed -n '2,$p' "$out/plan.log" >&2
nfiles=$(grep -c -v '^P' "$out/plan")

url=none
if command -v prometheus-node-exporter >/dev/null 2>&1; then
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	prometheus-node-exporter --web.listen-address=127.0.0.1:$port --collector.disable-defaults \
		--collector.meminfo --collector.vmstat --collector.vmstat.fields='.*' --collector.zoneinfo \
		--collector.slabinfo --collector.cgroups --collector.pressure --collector.stat --collector.cpu \
		--collector.uname --collector.sysctl --collector.sysctl.include=vm.min_free_kbytes \
		--collector.sysctl.include=vm.watermark_scale_factor --collector.processes >/dev/null 2>&1 &
	nepid=$!
	url=http://127.0.0.1:$port/metrics
	i=0
	until curl -s -o /dev/null "$url"; do
		i=$((i + 1)); [ $i -lt 50 ] || { echo "node_exporter did not answer on $url" >&2; exit 1; }
		sleep 0.1
	done
fi
smem=none
command -v smem >/dev/null 2>&1 && smem=smem

python3 - "$runs" "$BIN" "$out/rawread" "$out/plan" "$url" "$smem" "$nfiles" "$(head -1 "$out/plan.log")" "${nepid:-0}" <<'PY'
import os, statistics, subprocess, sys, time
runs, md, raw, plan, url, smem, nfiles, planlog, nepid = sys.argv[1:]
tck = os.sysconf("SC_CLK_TCK")
def ne_cpu():  # node_exporter's user + system seconds so far
    f = open(f"/proc/{nepid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / tck
runs = int(runs)
cmds = {"md": [md, "check", "--json"], "raw": [raw, plan]}
if url != "none":
    cmds["ne"] = ["curl", "-s", "-o", "/dev/null", url]
if smem != "none":
    cmds["smem"] = [smem, "-c", "pid uss pss rss"]
res = {k: {"wall": [], "cpu": [], "rss": []} for k in cmds}
ne_total = 0.0
null = open(os.devnull, "w")
for i in range(runs + 1):          # the first round warms the caches
    for k, c in cmds.items():
        c0 = ne_cpu() if k == "ne" else 0
        t = time.perf_counter()
        pid = os.posix_spawnp(c[0], c, os.environ, file_actions=[
            (os.POSIX_SPAWN_DUP2, null.fileno(), 1), (os.POSIX_SPAWN_DUP2, null.fileno(), 2)])
        _, _, ru = os.wait4(pid, 0)
        wall = time.perf_counter() - t
        if k == "ne" and i:
            ne_total += ne_cpu() - c0
        if i:
            res[k]["wall"].append(wall * 1000)
            res[k]["cpu"].append((ru.ru_utime + ru.ru_stime) * 1000)
# Peak RSS through GNU time (a small C parent): a child of this
# interpreter starts with the interpreter's own peak in its accounting.
for k, c in cmds.items():
    if k == "ne":  # the daemon's, not curl's
        res[k]["rss"] = [int(l.split()[1]) / 1024 for l in open(f"/proc/{nepid}/status") if l.startswith("VmHWM:")]
        continue
    for _ in range(3):
        p = subprocess.run(["/usr/bin/time", "-f", "%M"] + c, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        res[k]["rss"].append(int(p.stderr.strip().splitlines()[-1]) / 1024)
med = {k: {m: statistics.median(v) for m, v in r.items()} for k, r in res.items()}
load = open("/proc/loadavg").read().split()[:3]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"memdoctor check --json on this host: {cpu}, {os.cpu_count()} CPUs, load {' '.join(load)}")
print(f"medians of {runs} interleaved runs; check opened {nfiles} files ({planlog})")
print(f"{'what':44} {'wall ms':>8} {'cpu ms':>8} {'peak MiB':>9} {'check/this wall':>16} {'cpu':>6}")
def row(name, k, cpu=True):
    m = med[k]
    r = med["md"]["wall"] / m["wall"]
    rc = f"{med['md']['cpu'] / m['cpu']:.2f}x" if cpu and m["cpu"] > 0 else ""
    print(f"{name:44} {m['wall']:8.1f} {m['cpu'] if cpu else float('nan'):8.1f} {m['rss']:9.1f} {r:15.2f}x {rc:>6}")
row("memdoctor check --json", "md")
row("raw reads of the same files (rawread)", "raw")
if "ne" in med:
    row("node_exporter scrape, equivalent collectors", "ne", cpu=False)
    print(f"  node_exporter's own CPU per scrape (mean, clock ticks): {ne_total / runs * 1000:.1f} ms; "
          f"check/that {med['md']['cpu'] / max(ne_total / runs * 1000, 1e-9):.2f}x")
if "smem" in med:
    row("smem -c 'pid uss pss rss'", "smem")
print("goals: check <= 1.3x the raw reads, <= 0.7x the node_exporter scrape (wall)")
PY
