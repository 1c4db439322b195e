#!/bin/sh
# Benchmark: `memdoctor report` over a 30-day recording at 15 s (goals: under
# 10 s, a file under 5 MB). The recording is generated once (bench/gen30d: a
# real capture's series carried forward) and kept in $MEMDOCTOR_BENCH_DIR
# (default /tmp). Prints wall time, peak RSS and the file's size per run,
# and the same for `diagnose` on the same file for comparison, with the
# machine's load so noisy runs can be told apart.
#
# usage: bench/report.sh [RUNS]
set -eu
runs=${1:-3}
cd "$(dirname "$0")/.."
make -s build
dir=${MEMDOCTOR_BENCH_DIR:-/tmp}
db="$dir/memdoctor-bench-30d.db"
[ -s "$db" ] || go run ./bench/gen30d -o "$db" -days 30 -interval 15s
out="$dir/memdoctor-bench-30d-report.html"
echo "conditions: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), store $(du -h "$db" | cut -f1)"
i=0
while [ $i -lt "$runs" ]; do
  /usr/bin/time -f "report: %e s wall (%U s user, %S s sys), %M KiB peak RSS" ./memdoctor report --from "$db" -o "$out" > /dev/null
  echo "report file: $(wc -c < "$out") bytes"
  /usr/bin/time -f "diagnose: %e s wall (%U s user, %S s sys), %M KiB peak RSS" ./memdoctor diagnose --from "$db" --json > /dev/null
  i=$((i + 1))
done
