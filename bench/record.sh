#!/bin/sh
# Benchmark: what the recorder really costs a host, against node_exporter
# (all its default collectors) in the same run. Each runs in a fresh memory
# cgroup of its own, created here and removed after, so that what the
# kernel charges it (anonymous memory and the page cache it brought in,
# its executable's pages included) is read as a DaemonSet's limit sees it.
# `memdoctor record` runs at its defaults (15 s, top 50) serving /metrics;
# both /metrics are scraped every 15 s, as Prometheus would. After
# SECONDS it reports each one's cgroup charge from memory.stat, split into
# anonymous (v1 rss, v2 anon), file (v1 cache, v2 file; of which mapped:
# mapped_file, file_mapped) and kernel memory (v1
# memory.kmem.usage_in_bytes, v2 kernel), with the counter the limit
# applies to (memory.usage_in_bytes, v2 memory.current), the peak
# (max_usage_in_bytes, v2 memory.peak), RSS (anonymous, file), CPU as a
# share of one core, and the store's size; and, read once a second after
# the first sample, the median and largest charge over the run (one
# moment depends on whether a sample or an answer was just made).
# Each binary runs from a fresh copy in a temporary directory (a new inode,
# written out and dropped from the page cache before it starts): the page
# cache is charged to the cgroup that first brings a page in, so run from
# its installed path a binary whose pages another process had read (the
# node_exporter of the host, the build) would cost its cgroup nothing.
#
# usage: bench/record.sh [SECONDS]     (default 120; root)
# Environment: BIN=path measures that binary instead of building ./memdoctor;
# BASE=path runs that binary too, as a third row (memdoctor-base) in its
# own cgroup in the same run, for a before/after comparison;
# READAHEAD_KB=128 runs the binaries from an ext4 file system on a loop
# device of its own that reads ahead that much (128 KiB is the kernel's
# default; a virtual disk may read ahead 8 MiB, and start-up's first page
# faults then read a whole binary, which sets each one's peak).
set -eu
secs=${1:-120}
cd "$(dirname "$0")/.."
if [ -z "${BIN:-}" ]; then
	make -s build
	BIN=./memdoctor
fi
BIN=$(readlink -f "$BIN")
ne=$(command -v prometheus-node-exporter || command -v node_exporter || true)
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
bacg=$cgbase/bench-record-base-$tag
pid=""; nepid=""; bapid=""
cleanup() {
	set +e # a killed child's status must not end the cleanup
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	[ -n "$nepid" ] && kill "$nepid" 2>/dev/null
	[ -n "$bapid" ] && kill "$bapid" 2>/dev/null
	[ -n "$pid" ] && wait "$pid" 2>/dev/null
	[ -n "$nepid" ] && wait "$nepid" 2>/dev/null
	[ -n "$bapid" ] && wait "$bapid" 2>/dev/null
	for cg in "$mdcg" "$necg" "$bacg"; do
		[ -d "$cg" ] || continue
		i=0
		while ! rmdir "$cg" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	done
	if [ -n "${loopdev:-}" ]; then
		umount "$dir/ra" 2>/dev/null
		losetup -d "$loopdev" 2>/dev/null
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
mkdir "$mdcg" "$necg" "$bacg"
bindir=$dir
loopdev=""
if [ -n "${READAHEAD_KB:-}" ]; then
	for t in losetup mkfs.ext4 mount; do
		command -v $t >/dev/null 2>&1 || { echo "READAHEAD_KB needs $t (apt-get install mount e2fsprogs)" >&2; exit 1; }
	done
	truncate -s 256M "$dir/ra.img"
	mkfs.ext4 -q -F "$dir/ra.img"
	loopdev=$(losetup -f --show "$dir/ra.img")
	mkdir "$dir/ra"
	mount "$loopdev" "$dir/ra"
	echo "$READAHEAD_KB" >"/sys/block/$(basename "$loopdev")/queue/read_ahead_kb"
	bindir=$dir/ra
fi
readahead=$(cat "/sys/block/$(lsblk -no PKNAME "$(findmnt -no SOURCE -T "$bindir")" 2>/dev/null | head -1)/queue/read_ahead_kb" 2>/dev/null ||
	cat "/sys/block/$(basename "$(findmnt -no SOURCE -T "$bindir")")/queue/read_ahead_kb" 2>/dev/null || echo "?")
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# fresh SRC DST: a copy of SRC at DST, on disk and out of the page cache
# (a new inode no one else has read, so nothing of it is charged yet).
fresh() {
	cp "$1" "$2"
	python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.fsync(fd)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$2"
	if command -v fincore >/dev/null && [ "$(fincore -nb -o RES "$2")" -gt 0 ]; then
		echo "bench/record.sh: $2 is still in the page cache after dropping it" >&2
	fi
}
# $incg CG CMD...: CMD runs in the memory cgroup CG from its first
# instruction, as the process sh started ($! is its pid).
incg='echo $$ > "$0/cgroup.procs" && exec "$@"'

mdport=$(freeport)
fresh "$BIN" "$bindir/memdoctor"
sh -c "$incg" "$mdcg" "$bindir/memdoctor" record --db "$dir/md.db" --listen "127.0.0.1:$mdport" --interval 15s --top 50 2>"$dir/log" &
pid=$!
baport=""
if [ -n "${BASE:-}" ]; then
	baport=$(freeport)
	fresh "$BASE" "$bindir/memdoctor-base"
	sh -c "$incg" "$bacg" "$bindir/memdoctor-base" record --db "$dir/base.db" --listen "127.0.0.1:$baport" --interval 15s --top 50 2>"$dir/baselog" &
	bapid=$!
fi
neport=""
if [ -n "$ne" ]; then
	neport=$(freeport)
	fresh "$ne" "$bindir/node_exporter"
	sh -c "$incg" "$necg" "$bindir/node_exporter" --web.listen-address="127.0.0.1:$neport" >/dev/null 2>&1 &
	nepid=$!
fi
sleep 1
tck=$(getconf CLK_TCK)
cpu() { awk -v t="$tck" '{ sub(/.*\) /, ""); split($0, f, " "); print (f[12] + f[13]) / t }' "/proc/$1/stat"; }
c0=$(cpu $pid); n0=0; [ -n "$nepid" ] && n0=$(cpu $nepid); b0=0; [ -n "$bapid" ] && b0=$(cpu $bapid)
t0=$(date +%s.%N)
i=0
# snap NAME CGROUP: one line of NAME's charge now (anon file kernel, bytes)
# into the series, for the medians over the run.
snap() {
	if [ $v = 1 ]; then
		k=$(cat "$2/memory.kmem.usage_in_bytes" 2>/dev/null || echo 0)
		awk -v n="$1" -v i="$i" -v k="$k" '$1 == "rss" { a = $2 } $1 == "cache" { f = $2 } END { print n, i, a, f, k }' "$2/memory.stat"
	else
		awk -v n="$1" -v i="$i" '$1 == "anon" { a = $2 } $1 == "file" { f = $2 } $1 == "kernel" { k = $2 }
			$1 ~ /^(kernel_stack|pagetables|percpu|sock|slab)$/ { s += $2 } END { print n, i, a, f, (k != "" ? k : s + 0) }' "$2/memory.stat"
	fi
}
while [ "$i" -lt "$secs" ]; do
	sleep 1
	i=$((i + 1))
	{
		snap memdoctor "$mdcg"
		[ -n "$bapid" ] && snap memdoctor-base "$bacg"
		[ -n "$nepid" ] && snap node_exporter "$necg"
	} >>"$dir/series"
	if [ $((i % 15)) = 0 ]; then
		curl -s -o /dev/null "http://127.0.0.1:$mdport/metrics" || echo "scrape of memdoctor failed at $i s" >&2
		[ -n "$baport" ] && { curl -s -o /dev/null "http://127.0.0.1:$baport/metrics" || echo "scrape of memdoctor-base failed at $i s" >&2; }
		[ -n "$neport" ] && { curl -s -o /dev/null "http://127.0.0.1:$neport/metrics" || echo "scrape of node_exporter failed at $i s" >&2; }
	fi
done
t1=$(date +%s.%N)
# report NAME PID CGROUP CPU0: one line of figures, read now.
report() {
	st=$3/memory.stat
	if [ $v = 1 ]; then
		use=$(cat "$3/memory.usage_in_bytes"); peak=$(cat "$3/memory.max_usage_in_bytes")
		anon=$(awk '$1 == "rss" { print $2 }' "$st"); file=$(awk '$1 == "cache" { print $2 }' "$st")
		mapped=$(awk '$1 == "mapped_file" { print $2 }' "$st")
		kernel=$(cat "$3/memory.kmem.usage_in_bytes" 2>/dev/null || echo 0)
	else
		use=$(cat "$3/memory.current"); peak=$(cat "$3/memory.peak" 2>/dev/null || echo 0)
		anon=$(awk '$1 == "anon" { print $2 }' "$st"); file=$(awk '$1 == "file" { print $2 }' "$st")
		mapped=$(awk '$1 == "file_mapped" { print $2 }' "$st")
		kernel=$(awk '$1 == "kernel" { k = $2 } $1 ~ /^(kernel_stack|pagetables|percpu|sock|slab)$/ { s += $2 } END { print (k != "" ? k : s + 0) }' "$st")
	fi
	awk '/^(VmRSS|RssAnon|RssFile):/ { printf "%s ", $2 }' "/proc/$2/status"
	echo "$1 $use $peak $anon $file $mapped $kernel $(cpu "$2") $4"
}
{
	report memdoctor "$pid" "$mdcg" "$c0"
	[ -n "$bapid" ] && report memdoctor-base "$bapid" "$bacg" "$b0"
	[ -n "$nepid" ] && report node_exporter "$nepid" "$necg" "$n0"
} >"$dir/figures"
kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; pid=""
size=$(du -b "$dir"/md.db* | awk '{s+=$1} END {print s}')
python3 - "$t0" "$t1" "$size" "$secs" "$v" "$dir/figures" "$dir/series" "$readahead" <<'PY'
import statistics, sys
t0, t1, size, secs = map(float, sys.argv[1:5])
v, figures, series, readahead = sys.argv[5], sys.argv[6], sys.argv[7], sys.argv[8]
rows = {}
for l in open(figures):
    f = l.split()
    rss, anon_rss, file_rss = (int(x) / 1024 for x in f[:3])
    name = f[3]
    use, peak, anon, file, mapped, kernel = (int(x) / 2**20 for x in f[4:10])
    cpu = (float(f[10]) - float(f[11])) / (t1 - t0)
    rows[name] = dict(charge=anon + file + kernel, use=use, peak=peak, anon=anon, file=file, mapped=mapped, kernel=kernel,
                      rss=rss, anon_rss=anon_rss, file_rss=file_rss, cpu=cpu)
load = open("/proc/loadavg").read().split()[:3]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"memdoctor record (15 s, top 50) and node_exporter (default collectors), each in its own memory cgroup (v{v}),")
print(f"/metrics of both scraped every 15 s, figures after {secs:.0f} s; {cpu}, load {' '.join(load)}")
print(f"the binaries run from a fresh copy on a disk reading ahead {readahead} KiB")
print("charge = anon + file + kernel from memory.stat (MiB); usage: the counter the limit applies to")
print(f"{'':14} {'charge':>7} {'anon':>6} {'file':>6} {'mapped':>6} {'kernel':>6} {'usage':>6} {'peak':>6} | {'RSS MiB':>7} {'anon':>6} {'file':>6} | {'CPU':>7}")
for n, r in rows.items():
    print(f"{n:14} {r['charge']:7.1f} {r['anon']:6.1f} {r['file']:6.1f} {r['mapped']:6.1f} {r['kernel']:6.1f} {r['use']:6.1f} {r['peak']:6.1f} | "
          f"{r['rss']:7.1f} {r['anon_rss']:6.1f} {r['file_rss']:6.1f} | {100*r['cpu']:6.2f}%")
# The charge once a second after the first sample's 15 s: a single
# moment depends on whether a sample or an answer was just made.
over = {}
for l in open(series):
    n, t, a, f, k = l.split()
    if int(t) > 15:
        over.setdefault(n, []).append(tuple(int(x) / 2**20 for x in (a, f, k)))
if over:
    print(f"over the run (once a second after 15 s): median and max of the charge, median anon and file (MiB)")
    for n, xs in over.items():
        ch = [sum(x) for x in xs]
        rows[n]["charge_med"] = statistics.median(ch)
        rows[n]["anon_med"] = statistics.median(x[0] for x in xs)
        print(f"{n:14} {statistics.median(ch):7.1f} {max(ch):6.1f} {rows[n]['anon_med']:6.1f} {statistics.median(x[1] for x in xs):6.1f}")
q = lambda a, b: f"{a / b:.2f}x" if b else "n/a"
if "node_exporter" in rows:
    m, n = rows["memdoctor"], rows["node_exporter"]
    print(f"memdoctor/node_exporter: charge {q(m['charge'], n['charge'])}, peak {q(m['peak'], n['peak'])}, "
          f"anonymous {q(m['anon'], n['anon'])}, file {q(m['file'], n['file'])} (goal: charge and peak <= 1x)")
    if "charge_med" in m and "charge_med" in n:
        print(f"  over the run: charge {q(m['charge_med'], n['charge_med'])}, anonymous {q(m['anon_med'], n['anon_med'])} (medians)")
if "memdoctor-base" in rows:
    m, b = rows["memdoctor"], rows["memdoctor-base"]
    print(f"memdoctor/memdoctor-base: charge {q(m['charge'], b['charge'])}, peak {q(m['peak'], b['peak'])}, "
          f"anonymous {q(m['anon'], b['anon'])}, file {q(m['file'], b['file'])}")
    if "charge_med" in m and "charge_med" in b:
        print(f"  over the run: charge {q(m['charge_med'], b['charge_med'])}, anonymous {q(m['anon_med'], b['anon_med'])} (medians)")
print(f"store after {secs:.0f} s: {size/1024:.0f} KiB")
PY
