#!/bin/sh
# Benchmark: `memdoctor check` with many memory cgroups, and the recorder's
# cost per recorded cgroup.
#
# Makes N memory cgroups (pods of nine containers, as on a busy node) under
# one parent of its own in the memory hierarchy (v1 or v2), times
# `memdoctor check --json` (two warm-up runs, then the median of RUNS), for
# each N given; then records a few samples with the
# default cgroup selection and with many more cgroups read in full, and
# reports the CPU time and the store bytes each extra cgroup costs a
# sample. Everything it made is removed on exit, interrupt included.
#
# usage: sudo bench/cgroups.sh [RUNS] [N...]     (default 21 runs; 200 5000)
# Environment: BIN=path measures that binary instead of building ./memdoctor;
# SAMPLES (default 20) and INTERVAL (default 1s) shape the recorder part
# (SAMPLES of at most INTERVAL each; store bytes include SQLite's pages).
set -eu
runs=${1:-21}
[ $# -gt 0 ] && shift
sizes=${*:-200 5000}
samples=${SAMPLES:-20}
interval=${INTERVAL:-1s}
cd "$(dirname "$0")/.."
if [ -z "${BIN:-}" ]; then
	make -s build
	BIN=./memdoctor
fi
if [ -d /sys/fs/cgroup/memory ]; then
	mem=/sys/fs/cgroup/memory
else
	mem=/sys/fs/cgroup
fi
parent=$mem/memdoctor-bench-$$
tmp=$(mktemp -d)

# rm_cgroups removes the cgroups deepest first (a cgroup with children
# cannot go); cleanup the temporary files too.
rm_cgroups() {
	if [ -d "$parent" ]; then
		find "$parent" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null || true
		rmdir "$parent" 2>/dev/null || true
	fi
}
cleanup() {
	rm_cgroups
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# make_cgroups N: N cgroups below $parent (pods, each with up to nine
# containers); the first tenth get a 64 MiB limit.
make_cgroups() {
	n=$1
	rm_cgroups
	mkdir "$parent"
	python3 - "$parent" "$n" <<'PY'
import os, sys
parent, n = sys.argv[1], int(sys.argv[2])
made = pod = 0
while made < n:
    p = f"{parent}/pod{pod}"
    os.mkdir(p); made += 1; pod += 1
    for c in range(9):
        if made >= n:
            break
        os.mkdir(f"{p}/c{c}"); made += 1
PY
}

time_check() {
	python3 - "$runs" "$BIN" <<'PY'
import resource, subprocess, sys, time, statistics
n, b = int(sys.argv[1]), sys.argv[2]
for _ in range(2):  # warm-up
    subprocess.run([b, "check", "--json"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
ts = []
for _ in range(n):
    t = time.perf_counter()
    subprocess.run([b, "check", "--json"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ts.append((time.perf_counter() - t) * 1000)
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"check: median {statistics.median(ts):.1f} ms, min {min(ts):.1f}, max {max(ts):.1f} ({n} runs); peak RSS {rss:.1f} MiB")
PY
}

for n in $sizes; do
	make_cgroups "$n"
	echo "== check with $n memory cgroups of this benchmark below $parent (plus the host's own)"
	time_check
done

# The recorder: 200 cgroups, of which EXTRA hold 1 MiB of shmem each (it
# stays charged after the writer exits). Recorded once with those at no
# limit (the default selection: the host's top 10) and once with a limit
# 5 % above their usage, which makes the selection read every one of them
# in full each sample: the difference is the cost of EXTRA more recorded
# cgroups.
make_cgroups 200
extra=50
setlimit() { # DIR BYTES|max
	if [ -f "$1/memory.limit_in_bytes" ]; then
		[ "$2" = max ] && set -- "$1" -1
		echo "$2" > "$1/memory.limit_in_bytes"
	else
		echo "$2" > "$1/memory.max"
	fi
}
i=0
for d in "$parent"/pod*/c0 "$parent"/pod*/c1; do
	[ $i -ge $extra ] && break
	sh -c "echo \$\$ > $d/cgroup.procs && head -c 1048576 /dev/zero > /dev/shm/memdoctor-bench-$$-$i"
	echo "$d" >> "$tmp/charged"
	i=$((i + 1))
done
trap 'rm -f /dev/shm/memdoctor-bench-$$-*; cleanup' EXIT
secs=$(python3 -c "s='$interval'; v=float(s[:-1]) if s.endswith('s') else float(s); print(round(v*$samples))")
rec() { # DB TIMES
	/usr/bin/time -f '%U %S' -o "$2" timeout -s INT "$secs" "$BIN" record --db "$1" --listen '' --interval "$interval" --top 0 >/dev/null 2>&1 || true
}
while read -r d; do setlimit "$d" max; done < "$tmp/charged"
rec "$tmp/a.db" "$tmp/ta"
# 5 % above what each is charged now (1 MiB of shmem and the kernel
# memory that came with it): near its limit, never below its usage.
usage() { cat "$1/memory.usage_in_bytes" 2>/dev/null || cat "$1/memory.current"; }
while read -r d; do setlimit "$d" $(( $(usage "$d") * 105 / 100 / 4096 * 4096 + 4096 )); done < "$tmp/charged"
rec "$tmp/b.db" "$tmp/tb"
python3 - "$tmp" "$extra" "$samples" <<'PY'
import os, sys
tmp, extra, samples = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def cpu(f):
    u, s = open(f).read().split()[-2:]
    return float(u) + float(s)
def size(db):
    return sum(os.path.getsize(os.path.join(tmp, f)) for f in os.listdir(tmp) if f.startswith(os.path.basename(db)))
ca, cb = cpu(f"{tmp}/ta"), cpu(f"{tmp}/tb")
sa, sb = size(f"{tmp}/a.db"), size(f"{tmp}/b.db")
print(f"recorder, about {samples} samples: {ca:.2f} s CPU and {sa} store bytes with the default selection; "
      f"{cb:.2f} s CPU and {sb} bytes with {extra} more cgroups read in full")
print(f"per recorded cgroup per sample: {(cb - ca) / extra / samples * 1e6:.0f} us CPU, {(sb - sa) / extra / samples:.0f} store bytes")
PY
