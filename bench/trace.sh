#!/bin/sh
# Benchmark: what `check --trace` and `record --trace` cost while a job
# runner makes and removes memory cgroups at OPS operations a second (default
# 10,000: 5,000 jobs a second), from a memory cgroup of its own. Runs the
# Go benchmark BenchmarkTrace10kOps (internal/cgtrace) RUNS times, each
# tracing SECONDS after a second of warm-up, and prints the medians of:
#   the one-off start (reading the program, CO-RE relocation against the
#   kernel's BTF, loading and attaching): wall time and CPU;
#   the steady state: the tracing process' CPU (getrusage) as a share of a
#   core and per cgroup operation;
#   the BPF programs' own time (the kernel's run-time statistics, turned on
#   for the run), spent in the runner's mkdir and rmdir and where the
#   kernel frees the removed cgroups: per operation and as a share of a
#   core;
#   the traced rate, records dropped and the process' peak RSS.
#
# usage: sudo bench/trace.sh [SECONDS] [RUNS]     (default 30 s, 3 runs)
# Needs root, the kernel's BTF and the v1 memory controller (the benchmark
# skips otherwise); OPS and POLL (the drain period, default the tracer's)
# are passed on.
set -eu
secs=${1:-30}
runs=${2:-3}
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
CGTRACE_BENCH_SECONDS=$secs CGTRACE_BENCH_OPS=${OPS:-10000} CGTRACE_BENCH_POLL=${POLL:-} \
	go test -count="$runs" -run '^$' -bench '^BenchmarkTrace10kOps$' -benchtime 1x ./internal/cgtrace/ | tee "$out"
python3 - "$out" <<'PY'
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    if not line.startswith("BenchmarkTrace10kOps"):
        continue
    f = line.split()
    for v, unit in zip(f[2::2], f[3::2]):
        runs.setdefault(unit, []).append(float(v))
if not runs:
    sys.exit("no benchmark result (root, BTF and the v1 memory controller are needed)")
m = {k: statistics.median(v) for k, v in runs.items()}
n = len(runs["%core"])
print(f"\nmedians of {n} runs at {m['ops/s']:.0f} cgroup operations/s:")
print(f"  start (once): {m['start-ms']:.0f} ms, {m['start-cpu-ms']:.0f} ms CPU")
print(f"  tracer, steady: {m['%core']:.2f} % of a core, {m['tracer-ns/op']:.0f} ns per operation")
if "bpf-ns/op" in m:
    print(f"  BPF programs (in the kernel): {m['bpf-ns/op']:.0f} ns per operation, {m['bpf-%core']:.2f} % of a core")
    runs = ", ".join(f"{p} {m[p + '-ns/run']:.0f} ns" for p in ("mkdir", "rmdir", "release") if p + "-ns/run" in m)
    if runs:
        print(f"  per run of each program: {runs}")
    print(f"  in all: {m['%core'] + m['bpf-%core']:.2f} % of a core")
print(f"  dropped {m['dropped']:.0f}, peak RSS {m['maxrss-MiB']:.1f} MiB")
PY
