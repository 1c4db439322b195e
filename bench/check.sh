#!/bin/sh
# Benchmark: `memdoctor check --json` on this host against
#  - the raw cost of its reads: bench/rawread (C) replays, from an strace of
#    a check run taken just before it in the same round, every file check
#    opened, once, with the same reads into one reusable buffer, nothing
#    parsed (goal: check <= 1.3x); files of processes gone between the
#    trace and the replay are skipped and counted; bench/rawread/gorawread
#    replays the same plan in Go, the floor of a Go program's reads;
#  - a node_exporter scrape (curl of /metrics) with the equivalent
#    collectors, on a loopback port of its own, running only for its
#    scrape in each round (goal: check <= 0.7x);
#  - smem for the per-process part.
# Runs are interleaved (check, raw reads, scrape, check, ...) so that a
# change in the host's load moves all three; medians of whole processes,
# wall and CPU (user + system of the child, from wait4), and peak RSS
# (GNU time, three more runs). node_exporter's CPU is its own, read from
# /proc between scrapes (curl's is curl's).
#
# usage: bench/check.sh [RUNS]      (root: slabinfo, every smaps, map_files)
# Environment: BIN=path measures that binary instead of building ./memdoctor;
# BASE=path runs that one too (check --json) in every round and prints
# BIN/BASE as the median of the rounds' ratios, paired, for a before and
# after that the host's drift between rounds does not move.
set -eu
runs=${1:-21}
cd "$(dirname "$0")/.."
out=$(mktemp -d)
port=0
# (pkill finds no node_exporter when each round stopped its own: under
# set -e a failing last command of an && list ended the trap before the
# rm, and every run left its directory behind.)
trap 'if [ "$port" != 0 ]; then pkill -f "web.listen-address=127.0.0.1:$port" 2>/dev/null || true; fi; rm -rf "$out"' EXIT
if [ -z "${BIN:-}" ]; then
	make -s build
	BIN=./memdoctor
fi
# Each binary runs from a copy written as an installer writes it (cp,
# like dpkg, with write calls): the Go linker writes its output through a
# memory map, and the page cache that leaves made the same binary cost
# 3 to 5 % more CPU a check run (9 % for --version; 200 pairs each) than
# a copy of it. Copies of BIN and BASE alike, so a before and after
# compares the code, not how each file was written.
cp "$BIN" "$out/memdoctor"
BIN=$out/memdoctor
if [ -n "${BASE:-}" ]; then
	export BASE_NAME="$BASE"
	cp "$BASE" "$out/memdoctor-base"
	BASE=$out/memdoctor-base
fi
for t in strace cc python3 curl /usr/bin/time; do
	command -v $t >/dev/null 2>&1 || { echo "bench/check.sh needs $t (apt-get install strace gcc python3 curl time)" >&2; exit 1; }
done

# The raw-read yardstick: what a check run opened and read. Each round
# traces check anew (untimed) and replays that trace at once: a trace
# taken once and replayed for minutes replays, on a busy host, processes
# that have exited since, whose files cost the replay nothing.
cc -O2 -o "$out/rawread" bench/rawread/rawread.c
# The same replay in Go (bench/rawread/gorawread): the floor of a Go
# program making check's reads, what Go's runtime adds before any parsing.
goraw=none
if command -v go >/dev/null 2>&1 && CGO_ENABLED=0 go build -trimpath -o "$out/gorawread.built" ./bench/rawread/gorawread; then
	cp "$out/gorawread.built" "$out/gorawread" # as the binaries above
	goraw=$out/gorawread
fi
# plan FILE: trace one check run and write rawread's plan of it to FILE
# (FILE.log: how many files it opened, and those opened more than once).
plan() {
	strace -f -qq -y -s 0 -e trace=open,openat,read,pread64,getdents64 -o "$out/trace" "$BIN" check --json >/dev/null
	python3 bench/rawread/plan.py "$out/trace" "$(awk 'NR == 1 { print $1 }' "$out/trace")" >"$1" 2>"$1.log"
}
plan "$out/plan"
sed -n '2,$p' "$out/plan.log" >&2
nfiles=$(grep -c -v '^P' "$out/plan")

# node_exporter runs only for its own scrape in each round (started, two
# scrapes to warm it, the timed one, stopped): left running, it is a Go
# program serving /metrics on loopback, which check's discovery finds and
# scrapes (a whole scrape in check's wall time) and whose GC data makes
# check wait --gc-interval for a second reading.
ne=none
port=0
if command -v prometheus-node-exporter >/dev/null 2>&1; then
	ne=$(command -v prometheus-node-exporter)
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
fi
smem=none
command -v smem >/dev/null 2>&1 && smem=smem

python3 - "$runs" "$BIN" "$out/rawread" "$out/plan" "$ne" "$port" "$smem" "$nfiles" "$(head -1 "$out/plan.log")" "${BASE:-}" "$goraw" <<'PY'
import os, statistics, subprocess, sys, time
runs, md, raw, plan, ne, port, smem, nfiles, planlog, base, goraw = sys.argv[1:]
url = "none" if ne == "none" else f"http://127.0.0.1:{port}/metrics"
ne_args = [ne, f"--web.listen-address=127.0.0.1:{port}", "--collector.disable-defaults",
           "--collector.meminfo", "--collector.vmstat", "--collector.vmstat.fields=.*", "--collector.zoneinfo",
           "--collector.slabinfo", "--collector.cgroups", "--collector.pressure", "--collector.stat", "--collector.cpu",
           "--collector.uname", "--collector.sysctl", "--collector.sysctl.include=vm.min_free_kbytes",
           "--collector.sysctl.include=vm.watermark_scale_factor", "--collector.processes"]
def ne_start():  # a node_exporter that answered, scraped twice
    p = subprocess.Popen(ne_args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for i in range(100):
        if subprocess.run(["curl", "-s", "-o", "/dev/null", url]).returncode == 0:
            break
        time.sleep(0.05)
    else:
        p.kill(); sys.exit(f"node_exporter did not answer on {url}")
    subprocess.run(["curl", "-s", "-o", "/dev/null", url])
    return p
nepid, ne_hwm = 0, []
def retrace():  # a fresh trace of check, replayed at once (plan() above)
    subprocess.run(["strace", "-f", "-qq", "-y", "-s", "0", "-e", "trace=open,openat,read,pread64,getdents64",
                    "-o", plan + ".trace", md, "check", "--json"], stdout=subprocess.DEVNULL, check=True)
    pid = open(plan + ".trace").readline().split()[0]
    with open(plan, "w") as f:
        subprocess.run(["python3", "bench/rawread/plan.py", plan + ".trace", pid], stdout=f, stderr=subprocess.DEVNULL, check=True)
    return sum(1 for l in open(plan) if not l.startswith("P"))
tck = os.sysconf("SC_CLK_TCK")
def ne_cpu():  # node_exporter's user + system seconds so far
    f = open(f"/proc/{nepid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / tck
runs = int(runs)
# check waits --gc-interval (3 s) between its two readings of the runtimes
# when some process has GC data: "md0" is check without that wait (one
# reading), the row whose wall time compares with the others.
cmds = {"raw": [raw, plan], "md": [md, "check", "--json"], "md0": [md, "check", "--json", "--gc-interval", "0"]}
if goraw != "none":
    cmds["goraw"] = [goraw, plan]
if url != "none":
    cmds["ne"] = ["curl", "-s", "-o", "/dev/null", url]
if smem != "none":
    cmds["smem"] = [smem, "-c", "pid uss pss rss"]
if base:
    cmds["base"] = [base, "check", "--json"]
res = {k: {"wall": [], "cpu": [], "rss": []} for k in cmds}
ne_total = 0.0
null = open(os.devnull, "w")
rawout = open(plan + ".out", "w+")
traced, skipped = [], []           # per round: files in the trace, and gone by the replay
for i in range(runs + 1):          # the first round warms the caches
    n = retrace()
    for k, c in cmds.items():
        if k == "ne":
            nep = ne_start()
            nepid = nep.pid
        c0 = ne_cpu() if k == "ne" else 0
        out = rawout.fileno() if k == "raw" else null.fileno()
        if k == "raw":
            rawout.seek(0); rawout.truncate()
        t = time.perf_counter()
        pid = os.posix_spawnp(c[0], c, os.environ, file_actions=[
            (os.POSIX_SPAWN_DUP2, out, 1), (os.POSIX_SPAWN_DUP2, null.fileno(), 2)])
        _, _, ru = os.wait4(pid, 0)
        wall = time.perf_counter() - t
        if k == "raw" and i:
            rawout.seek(0)
            f = rawout.read().split()  # read N skipped M
            traced.append(n)
            skipped.append(int(f[3]) if len(f) == 4 else 0)
        if k == "ne":
            if i:
                ne_total += ne_cpu() - c0
                ne_hwm += [int(l.split()[1]) / 1024 for l in open(f"/proc/{nepid}/status") if l.startswith("VmHWM:")]
            nep.terminate(); nep.wait()
        if i:
            res[k]["wall"].append(wall * 1000)
            res[k]["cpu"].append((ru.ru_utime + ru.ru_stime) * 1000)
# Peak RSS through GNU time (a small C parent): a child of this
# interpreter starts with the interpreter's own peak in its accounting.
for k, c in cmds.items():
    if k == "ne":  # the daemon's, not curl's
        res[k]["rss"] = ne_hwm
        continue
    for _ in range(3):
        p = subprocess.run(["/usr/bin/time", "-f", "%M"] + c, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        res[k]["rss"].append(int(p.stderr.strip().splitlines()[-1]) / 1024)
med = {k: {m: statistics.median(v) for m, v in r.items()} for k, r in res.items()}
load = open("/proc/loadavg").read().split()[:3]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"memdoctor check --json on this host: {cpu}, {os.cpu_count()} CPUs, load {' '.join(load)}")
print(f"medians of {runs} interleaved runs; check opened {nfiles} files ({planlog})")
print(f"raw reads: each round replays a trace of check taken just before it: {statistics.median(traced):.0f} files "
      f"(median), of which {statistics.median(skipped):.0f} gone by the replay (median; at most {max(skipped)}) and skipped")
print(f"{'what':44} {'wall ms':>8} {'cpu ms':>8} {'peak MiB':>9} {'check/this wall':>16} {'cpu':>6}")
def row(name, k, cpu=True):
    m = med[k]
    r = med["md"]["wall"] / m["wall"]
    rc = f"{med['md']['cpu'] / m['cpu']:.2f}x" if cpu and m["cpu"] > 0 else ""
    print(f"{name:44} {m['wall']:8.1f} {m['cpu'] if cpu else float('nan'):8.1f} {m['rss']:9.1f} {r:15.2f}x {rc:>6}")
row("memdoctor check --json", "md")
row("  the same, --gc-interval 0 (no wait)", "md0")
row("raw reads of the same files (rawread)", "raw")
if "goraw" in med:
    row("  the same replay in Go (gorawread)", "goraw")
if "ne" in med:
    row("node_exporter scrape, equivalent collectors", "ne", cpu=False)
    print(f"  node_exporter's own CPU per scrape (mean, clock ticks): {ne_total / runs * 1000:.1f} ms; "
          f"check/that {med['md']['cpu'] / max(ne_total / runs * 1000, 1e-9):.2f}x")
if "smem" in med:
    row("smem -c 'pid uss pss rss'", "smem")
if "base" in med:
    row("BASE: " + os.environ.get("BASE_NAME", base) + " check --json", "base")
print(f"check/raw reads: CPU {med['md']['cpu'] / med['raw']['cpu']:.2f}x, wall {med['md']['wall'] / med['raw']['wall']:.2f}x; "
      f"without the wait: CPU {med['md0']['cpu'] / med['raw']['cpu']:.2f}x, wall {med['md0']['wall'] / med['raw']['wall']:.2f}x (goal <= 1.3x)")
# The same paired by round (each round's check over that round's replay,
# the median of the ratios), which a drift of the host's speed between
# rounds moves less than the ratio of two medians.
def paired(a, b, m="cpu"):
    return statistics.median(x / y for x, y in zip(res[a][m], res[b][m]) if y > 0)
print(f"  paired by round (median of {runs} ratios): CPU {paired('md', 'raw'):.2f}x, wall {paired('md', 'raw', 'wall'):.2f}x; "
      f"without the wait CPU {paired('md0', 'raw'):.2f}x")
if "goraw" in med:
    print(f"Go's floor: the Go replay/the C replay CPU {med['goraw']['cpu'] / med['raw']['cpu']:.2f}x, "
          f"wall {med['goraw']['wall'] / med['raw']['wall']:.2f}x; check/the Go replay CPU "
          f"{med['md']['cpu'] / med['goraw']['cpu']:.2f}x, wall {med['md']['wall'] / med['goraw']['wall']:.2f}x")
if "ne" in med:
    print(f"check/node_exporter scrape: wall {med['md']['wall'] / med['ne']['wall']:.2f}x, "
          f"without the wait {med['md0']['wall'] / med['ne']['wall']:.2f}x (goal <= 0.7x)")
if "base" in med:
    pc = statistics.median(a / b for a, b in zip(res["md"]["cpu"], res["base"]["cpu"]) if b > 0)
    pw = statistics.median(a / b for a, b in zip(res["md"]["wall"], res["base"]["wall"]) if b > 0)
    print(f"check/BASE, paired by round (median of {runs} ratios): CPU {pc:.2f}x, wall {pw:.2f}x")
PY
