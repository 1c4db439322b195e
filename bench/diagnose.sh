#!/bin/sh
# Benchmark: `memdoctor diagnose` over a 30-day recording at 15 s (goals:
# under 5 s, under 100 MiB peak RSS), then the heap in use at its peak
# (TestDiagnose30DaysPeakHeap fails above 150 MiB).
# The recording is generated once (bench/gen30d: a real capture's series
# carried forward) and kept in $MEMDOCTOR_BENCH_DIR (default /tmp).
#
# usage: bench/diagnose.sh [RUNS]
set -eu
runs=${1:-3}
cd "$(dirname "$0")/.."
make -s build
dir=${MEMDOCTOR_BENCH_DIR:-/tmp}
db="$dir/memdoctor-bench-30d.db"
[ -s "$db" ] || go run ./bench/gen30d -o "$db" -days 30 -interval 15s
i=0
while [ $i -lt "$runs" ]; do
  /usr/bin/time -f "diagnose: %e s wall, %M KiB peak RSS" ./memdoctor diagnose --from "$db" --json > /dev/null
  i=$((i + 1))
done
MEMDOCTOR_BENCH_DB="$db" go test -count=1 -run TestDiagnose30DaysPeakHeap -v ./internal/usecase/history | grep -E "peaked|FAIL|^ok"
