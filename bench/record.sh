#!/bin/sh
# Benchmark: what the recorder really costs a host, against node_exporter
# (all its default collectors) in the same run. Each runs in a fresh memory
# cgroup of its own, created here and removed after, so that what the
# kernel charges it (anonymous memory and the page cache it brought in,
# its executable's pages included) is read as a DaemonSet's limit sees it.
# `memdoctor record` runs at its defaults (15 s, top 50) serving /metrics;
# both /metrics are scraped every 15 s, as Prometheus would. After
# SECONDS it reports each one's cgroup charge (memory.usage_in_bytes, v2
# memory.current) and peak (max_usage_in_bytes, v2 memory.peak), RSS
# (anonymous, file), CPU as a share of one core, and the store's size.
# Before starting, each executable's unmapped pages are dropped from the
# page cache (posix_fadvise DONTNEED), so that each cgroup is charged for
# its own executable's pages rather than whoever read them first.
#
# usage: bench/record.sh [SECONDS]     (default 120; root)
# Environment: BIN=path measures that binary instead of building ./memdoctor.
set -eu
secs=${1:-120}
cd "$(dirname "$0")/.."
if [ -z "${BIN:-}" ]; then
	make -s build
	BIN=./memdoctor
fi
BIN=$(readlink -f "$BIN")
ne=$(command -v prometheus-node-exporter || true)
if [ -d /sys/fs/cgroup/memory ]; then
	cgbase=/sys/fs/cgroup/memory v=1
elif [ -f /sys/fs/cgroup/cgroup.controllers ]; then
	cgbase=/sys/fs/cgroup v=2
else
	echo "bench/record.sh needs a memory cgroup hierarchy (v1 or v2)" >&2
	exit 1
fi
dir=$(mktemp -d)
tag=$(basename "$dir")
mdcg=$cgbase/bench-record-md-$tag
necg=$cgbase/bench-record-ne-$tag
pid=""; nepid=""
cleanup() {
	set +e # a killed child's status must not end the cleanup
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	[ -n "$nepid" ] && kill "$nepid" 2>/dev/null
	[ -n "$pid" ] && wait "$pid" 2>/dev/null
	[ -n "$nepid" ] && wait "$nepid" 2>/dev/null
	for cg in "$mdcg" "$necg"; do
		[ -d "$cg" ] || continue
		i=0
		while ! rmdir "$cg" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	done
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
mkdir "$mdcg" "$necg"
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
dropcache() { python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$1"; }
# $incg CG CMD...: CMD runs in the memory cgroup CG from its first
# instruction, as the process sh started ($! is its pid).
incg='echo $$ > "$0/cgroup.procs" && exec "$@"'

mdport=$(freeport)
dropcache "$BIN"
sh -c "$incg" "$mdcg" "$BIN" record --db "$dir/md.db" --listen "127.0.0.1:$mdport" --interval 15s --top 50 2>"$dir/log" &
pid=$!
neport=""
if [ -n "$ne" ]; then
	neport=$(freeport)
	dropcache "$ne"
	sh -c "$incg" "$necg" "$ne" --web.listen-address="127.0.0.1:$neport" >/dev/null 2>&1 &
	nepid=$!
fi
sleep 1
tck=$(getconf CLK_TCK)
cpu() { awk -v t="$tck" '{ sub(/.*\) /, ""); split($0, f, " "); print (f[12] + f[13]) / t }' "/proc/$1/stat"; }
c0=$(cpu $pid); n0=0; [ -n "$nepid" ] && n0=$(cpu $nepid)
t0=$(date +%s.%N)
i=0
while [ "$i" -lt "$secs" ]; do
	sleep 1
	i=$((i + 1))
	if [ $((i % 15)) = 0 ]; then
		curl -s -o /dev/null "http://127.0.0.1:$mdport/metrics" || echo "scrape of memdoctor failed at $i s" >&2
		[ -n "$neport" ] && { curl -s -o /dev/null "http://127.0.0.1:$neport/metrics" || echo "scrape of node_exporter failed at $i s" >&2; }
	fi
done
t1=$(date +%s.%N)
# report NAME PID CGROUP CPU0: one line of figures, read now.
report() {
	if [ $v = 1 ]; then
		use=$(cat "$3/memory.usage_in_bytes"); peak=$(cat "$3/memory.max_usage_in_bytes")
		anon=$(awk '$1 == "total_rss" { print $2 }' "$3/memory.stat"); file=$(awk '$1 == "total_cache" { print $2 }' "$3/memory.stat")
	else
		use=$(cat "$3/memory.current"); peak=$(cat "$3/memory.peak" 2>/dev/null || echo 0)
		anon=$(awk '$1 == "anon" { print $2 }' "$3/memory.stat"); file=$(awk '$1 == "file" { print $2 }' "$3/memory.stat")
	fi
	awk '/^(VmRSS|RssAnon|RssFile):/ { printf "%s ", $2 }' "/proc/$2/status"
	echo "$1 $use $peak $anon $file $(cpu "$2") $4"
}
{
	report memdoctor "$pid" "$mdcg" "$c0"
	[ -n "$nepid" ] && report node_exporter "$nepid" "$necg" "$n0"
} >"$dir/figures"
kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; pid=""
size=$(du -b "$dir"/md.db* | awk '{s+=$1} END {print s}')
python3 - "$t0" "$t1" "$size" "$secs" "$v" "$dir/figures" <<'PY'
import sys
t0, t1, size, secs = map(float, sys.argv[1:5])
v, figures = sys.argv[5], sys.argv[6]
rows = {}
for l in open(figures):
    f = l.split()
    rss, anon_rss, file_rss = (int(x) / 1024 for x in f[:3])
    name = f[3]
    use, peak, anon, file = (int(x) / 2**20 for x in f[4:8])
    cpu = (float(f[8]) - float(f[9])) / (t1 - t0)
    rows[name] = dict(use=use, peak=peak, anon=anon, file=file, rss=rss, anon_rss=anon_rss, file_rss=file_rss, cpu=cpu)
load = open("/proc/loadavg").read().split()[:3]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"memdoctor record (15 s, top 50) and node_exporter (default collectors), each in its own memory cgroup (v{v}),")
print(f"/metrics of both scraped every 15 s, figures after {secs:.0f} s; {cpu}, load {' '.join(load)}")
print(f"{'':14} {'charge MiB':>10} {'peak MiB':>9} {'anon':>6} {'file':>6} | {'RSS MiB':>7} {'anon':>6} {'file':>6} | {'CPU':>7}")
for n, r in rows.items():
    print(f"{n:14} {r['use']:10.1f} {r['peak']:9.1f} {r['anon']:6.1f} {r['file']:6.1f} | {r['rss']:7.1f} {r['anon_rss']:6.1f} {r['file_rss']:6.1f} | {100*r['cpu']:6.2f}%")
if len(rows) == 2:
    m, n = rows["memdoctor"], rows["node_exporter"]
    q = lambda a, b: f"{a / b:.2f}x" if b else "n/a"
    print(f"memdoctor/node_exporter: charge {q(m['use'], n['use'])}, peak {q(m['peak'], n['peak'])}, "
          f"anonymous {q(m['anon'], n['anon'])} (goal: charge and peak <= 1x)")
print(f"store after {secs:.0f} s: {size/1024:.0f} KiB")
PY
