#!/bin/sh
# Store benchmark: the recorder's Append, bulk ingest, a 30-day select, and
# the bytes per sample of a recorded day (a real capture's 2032 series every
# 15 s for 24 h), compared with Prometheus' TSDB holding the same samples
# (OpenMetrics export -> promtool tsdb create-blocks-from openmetrics).
#
# usage: bench/store.sh [BENCHTIME]     (default 3s; needs promtool for the comparison)
# The day's OpenMetrics export is ~1 GB and promtool reads it once per 2 h
# block: the comparison takes a few minutes.
set -eu
benchtime=${1:-3s}
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

go test ./internal/store -run '^$' -bench 'AppendScrape|Ingest|Select30Days' -benchtime "$benchtime"
MEMDOCTOR_STORE_BENCH_OUT=$out go test ./internal/store -run '^$' -bench RecordDay -benchtime 1x | tee "$out/day.txt"

if ! command -v promtool >/dev/null 2>&1; then
  echo "promtool not installed (Debian package prometheus): no comparison with Prometheus' TSDB"
  exit 0
fi
echo
printf '%-10s %12s %10s %14s %10s %8s\n' day store-B B/sample prometheus-B B/sample ratio
for v in aligned jitter2ms; do
  promtool tsdb create-blocks-from openmetrics "$out/$v.om" "$out/$v.tsdb" >/dev/null
  prom=$(du -sb "$out/$v.tsdb" | cut -f1)
  blocks=$(promtool tsdb list "$out/$v.tsdb" | awk 'NR > 1 { n++; s += $5 } END { print n, s }')
  nblocks=${blocks% *}
  psamples=${blocks#* }
  store=$(stat -c %s "$out/$v.db")
  samples=$(awk -v v="RecordDay/$v" '$1 ~ v { for (i = 1; i < NF; i++) if ($(i+1) == "samples") print $i }' "$out/day.txt")
  if [ "$psamples" != "$samples" ]; then
    echo "sample count differs: store $samples, Prometheus blocks $psamples" >&2
    exit 1
  fi
  awk -v v="$v" -v s="$store" -v p="$prom" -v n="$samples" \
    'BEGIN { printf "%-10s %12d %10.3f %14d %10.3f %8.2f\n", v, s, s / n, p, p / n, p / s }'
  echo "           ($samples samples in both; Prometheus: $nblocks blocks of 2 h, as promtool writes them, before any compaction)"
done
