#!/bin/sh
# Benchmark: the hoarding workload (testdata/programs/alloc_workload.c,
# the search-daemon incident) under glibc, glibc + libmemdoctor_preload.so (periodic trim,
# freed-bytes trim), jemalloc and tcmalloc, in one run, with ratios to
# jemalloc; plus the idle cost of the library's interposed free().
#
# usage: bench/alloc.sh [SECONDS] [REPS]
#   SECONDS  throughput window per run (default 15); REPS throughput runs per
#            allocator, interleaved, median reported (default 3)
# env:     THREADS (8), MIB (128 per thread), ROUNDS (4) for the workload;
#          INTERVAL, FREED override the calibrated trim settings (30s, 1GiB);
#          SWEEP=1 also measures a few other intervals and thresholds;
#          PROFILE_ONLY=1 measures only the heap profile's cost (below);
#          OTHER_LIB=PATH adds another build of the library to that
#          measurement (loaded, and sampling every 512 KiB), interleaved:
#          before/after a change to the library in one run.
#
# What is measured, per allocator:
#   peak / final RSS   `alloc_workload hoard THREADS MIB ROUNDS`: VmHWM, and
#                      VmRSS a settle time after the rounds (idle program)
#   ops/s, ops/CPU-s,  `alloc_workload hoard THREADS MIB 0` (cycles until told
#   mean RSS           to stop): ops over SECONDS after a 3 s warm-up, per
#                      wall second and per second of the process' CPU time
#                      (the cost measure: immune to other load on the host,
#                      and it includes the trim thread and page faults), VmRSS
#                      sampled every 250 ms
# The trim interval is picked from a measured trim cost: a calibration run
# trims every second and logs each trim (elapsedMs, RSS released, bytes freed
# since the last trim); cost per trim = elapsed + released pages x the page
# fault cost measured here; interval = cost / (2% of the CPUs), rounded up;
# the freed threshold = the measured free rate x that interval (same trim rate).
# Heap profile cost (MEMDOCTOR_PROFILE, also at the end of a full run): the
# same two workloads (hoard throughput in ops per CPU-second, freebench in CPU ns
# per malloc+free pair, 1 and 8 threads) under glibc alone, the library loaded
# with nothing set, the library sampling every 1 TiB (sampling on, but
# practically nothing is due: the cost of the per-call path alone) and every 512 KiB,
# interleaved; costs against glibc, then run by run against the library
# loaded and not sampling.
# Root recommended (installs libjemalloc2 and libtcmalloc-minimal4 if missing).
set -eu
secs=${1:-15}
reps=${2:-3}
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

libdir=/usr/lib/$(uname -m)-linux-gnu
need=""
[ -e "$libdir/libjemalloc.so.2" ] || need="$need libjemalloc2"
[ -e "$libdir/libtcmalloc_minimal.so.4" ] || need="$need libtcmalloc-minimal4"
if [ -n "$need" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing:$need" >&2
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need >/dev/null || true
fi

make -s -C preload
cc -O2 -pthread -o "$out/alloc_workload" testdata/programs/alloc_workload.c
cc -O2 -pthread -fno-builtin -o "$out/freebench" preload/test/freebench.c

# profile_cost: the heap profile's cost, four configurations interleaved.
profile_cost() {
  python3 - "$out" "$secs" "$reps" "$PWD/preload/libmemdoctor_preload.so" <<'PY'
import json, os, statistics, subprocess, sys, time
out, secs, reps, lib = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
T, M = os.environ.get("THREADS", "8"), os.environ.get("MIB", "128")
wl, fb = os.path.join(out, "alloc_workload"), os.path.join(out, "freebench")
base = {k: v for k, v in os.environ.items() if not k.startswith("MEMDOCTOR_")}
LOADED = "library loaded, not sampling"
def prof(rate, l=lib):
    return {"LD_PRELOAD": l, "MEMDOCTOR_PROFILE": rate, "MEMDOCTOR_PROFILE_PATH": os.path.join(out, "heap.%p")}
# 1 TiB: sampling on, but about one allocation per TiB allocated is due
# (practically none in a run): the per-call path alone, without the samples
# (stack walk, table) and the frees that match them.
configs = [("glibc", {}), (LOADED, {"LD_PRELOAD": lib}),
           ("sampling on, none due (1 TiB)", prof("1TiB")),
           ("library sampling every 512 KiB", prof("512KiB"))]
other = os.environ.get("OTHER_LIB", "")
OTHER_LOADED = "other build loaded"
if other:
    configs += [(OTHER_LOADED, {"LD_PRELOAD": other}), ("other build sampling 512 KiB", prof("512KiB", other))]
def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        f = f.read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
def hoard(env):
    p = subprocess.Popen([wl, "hoard", T, M, "0"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         env=dict(base, **env), text=True)
    def info():
        p.stdin.write("info\n"); p.stdin.flush()
        return json.loads(p.stdout.readline()[6:])
    p.stdout.readline(); time.sleep(3)
    a = info(); c0 = cpu_s(p.pid); time.sleep(secs); b = info(); c1 = cpu_s(p.pid)
    p.stdin.write("exit\n"); p.stdin.flush(); p.wait(timeout=60)
    return (b["ops"] - a["ops"]) / (c1 - c0)
def free_ns(env, threads):
    r = subprocess.run([fb, threads, "2"], env=dict(base, **env), capture_output=True, text=True, check=True)
    return float(r.stdout.split()[1])
res = {n: {"hoard": [], "fb1": [], "fb8": []} for n, _ in configs}
for r in range(reps):
    for name, env in configs[r % len(configs):] + configs[:r % len(configs)]:
        res[name]["hoard"].append(hoard(env))
        res[name]["fb1"].append(free_ns(env, "1"))
        res[name]["fb8"].append(free_ns(env, "8"))
med = statistics.median
g = res["glibc"]
print(f"\nheap profile cost: medians of {reps} interleaved runs (hoard: {T} threads x {M} MiB, {secs:.0f} s each; "
      f"freebench: 2 s each); cost against glibc alone")
print(f"{'configuration':32} {'hoard ops/CPU-s':>16} {'cost':>7} {'freebench 1 thr':>16} {'cost':>7} {'freebench 8 thr':>16} {'cost':>7}")
for name, _ in configs:
    x = res[name]
    h, f1, f8 = med(x["hoard"]), med(x["fb1"]), med(x["fb8"])
    print(f"{name:32} {h/1e6:>15.2f}M {1 - h/med(g['hoard']):>+7.1%} {f1:>13.2f} ns {f1/med(g['fb1']) - 1:>+7.1%} "
          f"{f8:>13.2f} ns {f8/med(g['fb8']) - 1:>+7.1%}")
    print(f"{'':32} runs: hoard " + ", ".join(f"{v/1e6:.2f}M" for v in x["hoard"]) +
          "; fb1 " + ", ".join(f"{v:.1f}" for v in x["fb1"]) + "; fb8 " + ", ".join(f"{v:.1f}" for v in x["fb8"]))
# The goal's measure: CPU cost per operation against the library loaded and
# not sampling, run by run (each round runs every configuration in turn, so
# a ratio compares neighbours in time), median [smallest-largest].
def paired(x, key, inverse, L):
    rs = [(b / a if inverse else a / b) - 1 for a, b in zip(x[key], L[key])]
    return f"{med(rs):>+7.1%} [{min(rs):+.1%}..{max(rs):+.1%}]"
for against in [LOADED] + ([OTHER_LOADED] if other else []):
    L = res[against]
    print(f"\ncost per operation against {'the library loaded, not sampling' if against == LOADED else 'the other build loaded'}: "
          f"median of the {reps} rounds' ratios")
    print(f"{'configuration':32} {'hoard':>24} {'freebench 1 thr':>24} {'freebench 8 thr':>24}")
    for name, _ in configs:
        if name != against:
            x = res[name]
            print(f"{name:32} {paired(x, 'hoard', True, L):>24} {paired(x, 'fb1', False, L):>24} {paired(x, 'fb8', False, L):>24}")
PY
}
if [ -n "${PROFILE_ONLY:-}" ]; then
  profile_cost
  exit 0
fi

python3 - "$out" "$secs" "$reps" "$PWD/preload/libmemdoctor_preload.so" "$libdir" <<'PY'
import json, math, mmap, os, statistics, subprocess, sys, time
from datetime import datetime

out, secs, reps, lib, libdir = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
T, M, R = os.environ.get("THREADS", "8"), os.environ.get("MIB", "128"), os.environ.get("ROUNDS", "4")
wl = os.path.join(out, "alloc_workload")
ncpu = os.cpu_count() or 1
BUDGET = 0.02  # share of the CPUs the trims may cost (half the 5% goal)

def status_kb(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0

class Workload:
    def __init__(self, env, args):
        e = dict(os.environ); e.update(env)
        self.p = subprocess.Popen([wl, "hoard", T, M] + args, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, env=e, text=True)
    def ready(self):
        line = self.p.stdout.readline()
        if not line.startswith("ready "):
            raise SystemExit(f"workload: {line!r}")
        return json.loads(line[6:])
    def info(self):
        self.p.stdin.write("info\n"); self.p.stdin.flush()
        return self.ready()
    def stop(self):
        self.p.stdin.write("exit\n"); self.p.stdin.flush()
        self.p.wait(timeout=60)

def cpu_s(pid):
    """utime + stime of the whole process (all threads, ours included)."""
    with open(f"/proc/{pid}/stat") as f:
        f = f.read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

def throughput(env, seconds):
    w = Workload(env, ["0"]); w.ready()
    time.sleep(3)
    a = w.info(); t0 = time.monotonic(); c0 = cpu_s(w.p.pid)
    rss = []
    while time.monotonic() - t0 < seconds:
        rss.append(status_kb(w.p.pid, "VmRSS")); time.sleep(0.25)
    b = w.info(); t1 = time.monotonic(); c1 = cpu_s(w.p.pid)
    w.stop()
    ops = b["ops"] - a["ops"]
    return ops / (t1 - t0), ops / (c1 - c0), statistics.mean(rss) * 1024

def rounds(env, settle):
    w = Workload(env, [R]); w.ready()
    time.sleep(settle)
    final = w.info()["rss_kb"] * 1024
    peak = status_kb(w.p.pid, "VmHWM") * 1024
    w.stop()
    return peak, final

def fault_cost():
    n = 256 << 20
    m = mmap.mmap(-1, n)
    t = time.perf_counter()
    for i in range(0, n, 4096): m[i] = 1
    d = time.perf_counter() - t
    t = time.perf_counter()
    for i in range(0, n, 4096): m[i] = 2
    d -= time.perf_counter() - t   # minus the loop itself
    m.close()
    return d / (n / 4096)

def nice_interval(s):
    for v in (1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600):
        if v >= s: return v
    return 600

def mib(b): return f"{b / 2**20:.0f} MiB"

pre = {"LD_PRELOAD": lib}
# ---- calibration ----
fault = fault_cost()
stats = os.path.join(out, "cal.jsonl")
throughput(dict(pre, MEMDOCTOR_TRIM_INTERVAL="1s", MEMDOCTOR_TRIM_FREED="1TiB", MEMDOCTOR_STATS=stats), 8)
trims = [e for e in map(json.loads, open(stats)) if e["event"] == "trim"][1:]
if len(trims) < 3:
    raise SystemExit("calibration: too few trims")
elapsed = statistics.median(e["elapsedMs"] for e in trims) / 1000
released = statistics.median(max(e["rss"]["diff"], 0) for e in trims)
def ts(e): return datetime.fromisoformat(e["time"].replace("Z", "+00:00")).timestamp()
span = ts(trims[-1]) - ts(trims[0])
free_rate = sum(e["freedBytes"] for e in trims[1:]) / span
cost = elapsed + released / 4096 * fault
interval = nice_interval(cost / (BUDGET * ncpu))
threshold_gib = 2 ** math.ceil(math.log2(max(free_rate * interval / 2**30, 1)))
interval_s = os.environ.get("INTERVAL") or f"{interval}s"
freed_s = os.environ.get("FREED") or f"{threshold_gib}GiB"
print(f"calibration (throughput mode, trim every 1 s): trim {elapsed*1000:.0f} ms, releases {mib(released)}, "
      f"page fault {fault*1e6:.2f} us => cost {cost*1000:.0f} ms per trim; frees {free_rate/2**30:.1f} GiB/s")
print(f"=> interval {interval}s (cost / ({BUDGET:.0%} of {ncpu} CPUs), rounded up), freed threshold {threshold_gib} GiB "
      f"(free rate x interval); using MEMDOCTOR_TRIM_INTERVAL={interval_s} MEMDOCTOR_TRIM_FREED={freed_s}")
def seconds_of(d):
    for suf, mult in (("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)):
        if d.endswith(suf): return float(d[:-len(suf)]) * mult
    return float(d)
settle = max(5.0, seconds_of(interval_s) + 2)  # at least one periodic trim after the rounds

configs = [("glibc", {})]
configs.append((f"glibc + preload, every {interval_s}", dict(pre, MEMDOCTOR_TRIM_INTERVAL=interval_s)))
configs.append((f"glibc + preload, per {freed_s} freed", dict(pre, MEMDOCTOR_TRIM_FREED=freed_s)))
je = os.path.join(libdir, "libjemalloc.so.2"); tc = os.path.join(libdir, "libtcmalloc_minimal.so.4")
if os.path.exists(je):
    configs.append(("jemalloc", {"LD_PRELOAD": je}))
    configs.append(("jemalloc, background_thread:true", {"LD_PRELOAD": je, "MALLOC_CONF": "background_thread:true"}))
if os.path.exists(tc):
    configs.append(("tcmalloc", {"LD_PRELOAD": tc}))
if os.environ.get("SWEEP"):
    for iv in ("1s", "5s", "30s"):
        if iv != interval_s: configs.append((f"  sweep: every {iv}", dict(pre, MEMDOCTOR_TRIM_INTERVAL=iv)))
    for fr in ("1GiB", "4GiB", "16GiB"):
        if fr != freed_s: configs.append((f"  sweep: per {fr} freed", dict(pre, MEMDOCTOR_TRIM_FREED=fr)))

res = {name: {"ops": [], "cpu": [], "mean": []} for name, _ in configs}
for r in range(reps):
    order = configs[r % len(configs):] + configs[:r % len(configs)]  # rotate: no config always first
    for name, env in order:
        ops, per_cpu, mean = throughput(env, secs)
        res[name]["ops"].append(ops); res[name]["cpu"].append(per_cpu); res[name]["mean"].append(mean)
for name, env in configs:
    iv = env.get("MEMDOCTOR_TRIM_INTERVAL")
    res[name]["settle"] = max(settle, seconds_of(iv) + 2) if iv else settle
    res[name]["peak"], res[name]["final"] = rounds(env, res[name]["settle"])

load = os.getloadavg()[0]
print(f"\nalloc_workload hoard, {T} threads x {M} MiB; peak/final: {R} rounds, final RSS {settle:.0f} s after them; "
      f"throughput: median of {reps} x {secs:.0f} s; {ncpu} CPUs, load average {load:.1f} at the end")
print("ops/s is wall-clock (other processes on the host shift it); ops/CPU-s counts the workload's own CPU time,")
print("trim thread and page faults included, and is the cost measure; 'cost' = 1 - ops/CPU-s / glibc's (negative: noise or faster)")
ref = res.get("jemalloc")
def med(x): return statistics.median(x) if isinstance(x, list) else x
def ratio(v, k): return f"{v / med(ref[k]):.2f}x" if ref else "n/a"
print(f"{'allocator':38} {'peak RSS':>9} {'/je':>6} {'final RSS':>10} {'/je':>6} {'mean RSS':>9} {'/je':>6} {'ops/s':>7} {'/je':>6} {'ops/CPU-s':>10} {'/je':>6} {'cost':>7}")
base = med(res["glibc"]["cpu"])
for name, _ in configs:
    x = res[name]; ops = med(x["ops"]); per_cpu = med(x["cpu"]); mean = med(x["mean"])
    print(f"{name:38} {mib(x['peak']):>9} {ratio(x['peak'], 'peak'):>6} {mib(x['final']):>10} {ratio(x['final'], 'final'):>6} "
          f"{mib(mean):>9} {ratio(mean, 'mean'):>6} {ops/1e6:>6.2f}M {ratio(ops, 'ops'):>6} {per_cpu/1e6:>9.2f}M {ratio(per_cpu, 'cpu'):>6} "
          f"{1 - per_cpu/base:>+7.1%}")
    if len(x["cpu"]) > 1:
        note = f"; final RSS {x['settle']:.0f} s after the rounds" if x["settle"] != settle else ""
        print(f"{'':38} ops/CPU-s runs: " + ", ".join(f"{v/1e6:.2f}M" for v in x["cpu"]) + note)
if ref:
    p = res[configs[1][0]]
    worst = max(p["peak"] / ref["peak"], p["final"] / ref["final"], med(p["mean"]) / med(ref["mean"]))
    cost = 1 - med(p["cpu"]) / base
    print(f"goal (periodic preload: RSS within 1.2x of jemalloc's, cost < 5%): worst RSS ratio {worst:.2f}x "
          f"({'met' if worst <= 1.2 else 'NOT met'}), cost {cost:+.1%} ({'met' if cost < 0.05 else 'NOT met'})")
PY

# ---- idle cost of the interposed free(), nothing set ----
for threads in 1 8; do
  python3 - "$out/freebench" "$PWD/preload/libmemdoctor_preload.so" "$threads" <<'PY'
import os, statistics, subprocess, sys
fb, lib, threads = sys.argv[1:]
def run(pre):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("MEMDOCTOR_"): del env[k]
    if pre: env["LD_PRELOAD"] = lib
    out = subprocess.run([fb, threads, "2"], env=env, capture_output=True, text=True, check=True).stdout
    return float(out.split()[1])
a, b = [], []
for _ in range(9):
    a.append(run(False)); b.append(run(True))
ma, mb = statistics.median(a), statistics.median(b)
d = statistics.median(y - x for x, y in zip(a, b))
print(f"idle free() cost, {threads} thread(s), malloc+free pair, 9 alternating runs x 2 s: glibc {ma:.2f} ns, "
      f"library loaded with nothing set {mb:.2f} ns (medians); median paired difference {d:+.2f} ns ({d / ma:+.1%}), "
      f"differences range {min(y - x for x, y in zip(a, b)):+.2f} .. {max(y - x for x, y in zip(a, b)):+.2f} ns")
PY
done

# ---- cost of the heap profile ----
profile_cost
