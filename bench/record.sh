#!/bin/sh
# Benchmark: the recorder's own cost. Runs `memdoctor record` at its
# defaults (15 s, top 50 processes) for DURATION seconds and reports its CPU
# as a share of one core, its RSS (peak; and in steady state, after the
# first WARMUP seconds: mean and maximum of one reading a second, split
# into anonymous memory and mapped file pages), and the store's growth.
#
# usage: bench/record.sh [SECONDS]     (default 300; root recommended)
# Environment: WARMUP (default 30 s); SCRAPE=1 serves /metrics on a free
# loopback port and scrapes it every 15 s, as Prometheus would;
# BIN=path measures that binary instead of building ./memdoctor.
set -eu
secs=${1:-300}
warmup=${WARMUP:-30}
cd "$(dirname "$0")/.."
if [ -z "${BIN:-}" ]; then
	make -s build
	BIN=./memdoctor
fi
dir=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
listen=''
if [ "${SCRAPE:-}" = 1 ]; then
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	listen=127.0.0.1:$port
fi
"$BIN" record --db "$dir/md.db" --listen "$listen" --interval 15s --top 50 2>"$dir/log" &
pid=$!
sleep 1
tck=$(getconf CLK_TCK)
read_cpu() { awk -v t="$tck" '{ print ($14 + $15) / t }' "/proc/$pid/stat"; }
c0=$(read_cpu); t0=$(date +%s.%N)
i=0
while [ "$i" -lt "$secs" ]; do
	sleep 1
	i=$((i + 1))
	if [ -n "$listen" ] && [ $((i % 15)) = 0 ]; then
		python3 -c "import urllib.request as u; u.urlopen('http://$listen/metrics').read()" || true
	fi
	[ "$i" -gt "$warmup" ] && awk '/^(VmRSS|RssAnon|RssFile):/ { printf "%s ", $2 } END { print "" }' "/proc/$pid/status" >>"$dir/rss"
done
c1=$(read_cpu); t1=$(date +%s.%N)
hwm=$(awk '/VmHWM/ {print $2}' /proc/$pid/status)
kill -TERM $pid; wait $pid 2>/dev/null || true
size=$(du -b "$dir"/md.db* | awk '{s+=$1} END {print s}')
python3 - "$c0" "$c1" "$t0" "$t1" "$hwm" "$size" "$secs" "$warmup" "${listen:-none}" "$dir/rss" <<'PY'
import sys
c0, c1, t0, t1, hwm, size, secs, warmup = map(float, sys.argv[1:9])
listen, rssfile = sys.argv[9], sys.argv[10]
rows = [list(map(int, l.split())) for l in open(rssfile) if l.strip()]
cpu = (c1 - c0) / (t1 - t0)
print(f"memdoctor record, 15 s interval, top 50 processes, {secs:.0f} s, /metrics: {listen}")
print(f"CPU: {100*cpu:.3f}% of one core (goal < 1%)")
print(f"RSS: peak {hwm/1024:.1f} MiB (start-up included)")
if rows:
    col = lambda i: [r[i] / 1024 for r in rows]
    rss, anon, file = col(0), col(1), col(2)
    mean = lambda v: sum(v) / len(v)
    print(f"steady RSS after {warmup:.0f} s: mean {mean(rss):.1f} MiB, max {max(rss):.1f} MiB (goal < 15 MiB); "
          f"anonymous mean {mean(anon):.1f}, max {max(anon):.1f} MiB; file pages mean {mean(file):.1f}, max {max(file):.1f} MiB")
print(f"store after {secs:.0f} s: {size/1024:.0f} KiB")
PY
