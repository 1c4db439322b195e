#!/bin/sh
# Benchmark: ingest of an OpenMetrics file of N instances x 1 sample (a
# fleet-wide instant query saved as text), for N = 10k, 30k, 100k (or the
# sizes given). Reports, per size, the wall time, CPU time (user + system)
# and peak RSS (/usr/bin/time -v) of `memdoctor export --from FILE -o -`
# (the ingest into a temporary store, then every sample written out again)
# up to $EXPORT_MAX instances (default 100000) and, up to $DIAGNOSE_MAX
# instances (default 300000), of `memdoctor diagnose --from FILE --json`
# and without --json (the file's lines grouped by instance: a scan indexes
# them, past 16,384 instances into a temporary file, then the instances
# are read and judged a batch at a time; of each only its findings, notes
# and summary are kept, past 4,096 in a temporary file), then the
# in-process benchmark (go test -bench IngestFleet). With BASE set to
# another memdoctor binary, diagnose is measured with it too, and the
# outputs of the two compared byte for byte.
# Files are generated once into $MEMDOCTOR_BENCH_DIR (default /tmp).
#
# usage: bench/ingest.sh [N ...]
set -eu
cd "$(dirname "$0")/.."
sizes=${*:-10000 30000 100000}
dir=${MEMDOCTOR_BENCH_DIR:-/tmp}/memdoctor-ingest
mkdir -p "$dir"
go build -o "$dir/memdoctor" ./cmd/memdoctor
measure() { # label, command...
  what=$1
  shift
  /usr/bin/time -v -o "$dir/time.txt" "$@" >"$dir/out" 2>"$dir/err.txt" || { cat "$dir/err.txt" >&2; exit 1; }
  awk -v l="$what" -F': ' '
    /Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i] }
    /User time \(seconds\)/ { cpu += $2 }
    /System time \(seconds\)/ { cpu += $2 }
    /Maximum resident set size/ { kb = $2 }
    END { printf "  %-12s %8.2f s  %7.2f s CPU  %7.1f MiB peak RSS\n", l, s, cpu, kb / 1024 }' "$dir/time.txt"
}
echo "$(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
for n in $sizes; do
  f=$dir/fleet-$n.om
  if [ ! -s "$f" ]; then
    awk -v n="$n" 'BEGIN {
      print "# TYPE node_memory_MemAvailable_bytes gauge"
      for (i = 0; i < n; i++)
        printf "node_memory_MemAvailable_bytes{instance=\"host-%06d:9100\",job=\"node\"} %d 1700000000.000\n", i, 1000000000 + i
      print "# EOF"
    }' >"$f"
  fi
  echo "$n instances x 1 sample ($(du -h "$f" | cut -f1)):"
  if [ "$n" -le "${EXPORT_MAX:-100000}" ]; then
    measure export "$dir/memdoctor" export --from "$f" -o -
  fi
  if [ "$n" -le "${DIAGNOSE_MAX:-300000}" ]; then
    for bin in ${BASE:+"$BASE"} "$dir/memdoctor"; do
      label=diagnose
      [ "$bin" = "$dir/memdoctor" ] || label=base
      measure "$label" "$bin" diagnose --from "$f" --json
      mv "$dir/out" "$dir/$label.json"
      measure "$label-txt" "$bin" diagnose --from "$f"
      mv "$dir/out" "$dir/$label.txt"
    done
    if [ -n "${BASE:-}" ]; then
      for ext in json txt; do
        if cmp -s "$dir/base.$ext" "$dir/diagnose.$ext"; then
          echo "  $ext output the same as BASE's"
        else
          echo "  $ext output DIFFERS from BASE's: $dir/base.$ext $dir/diagnose.$ext"
        fi
      done
    fi
  fi
done
go test ./internal/source -run '^$' -bench IngestFleet -benchtime 1x | grep -E '^Benchmark'
