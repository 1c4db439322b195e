#!/bin/sh
# Benchmark: `memdoctor rightsize --prometheus` over a synthetic
# Kubernetes fleet of CONTAINERS containers x 14 days (cadvisor and
# kube-state-metrics names, no node_exporter; bench/gencontainers),
# backfilled with promtool into a local Prometheus. Reports wall time,
# queries (from the JSON) and memdoctor's peak RSS (/usr/bin/time). The
# fleet and its TSDB are generated once and kept in $MEMDOCTOR_BENCH_DIR
# (default /tmp).
#
# usage: bench/rightsize.sh [CONTAINERS] [RUNS] [INTERVAL]
set -eu
n=${1:-5000}
runs=${2:-3}
iv=${3:-1h}
cd "$(dirname "$0")/.."
go build -o ./memdoctor ./cmd/memdoctor
dir=${MEMDOCTOR_BENCH_DIR:-/tmp}/memdoctor-rightsize-$n-$iv
if [ ! -d "$dir/tsdb" ]; then
  rm -rf "$dir"
  mkdir -p "$dir"
  echo "generating $n containers x 14 days at $iv into $dir" >&2
  /usr/bin/time -f "generate: %e s" go run ./bench/gencontainers -o "$dir" -containers "$n" -days 14 -interval "$iv" \
    -end "$(date -u -d '-3 hours' +%Y-%m-%dT%H:00:00Z)" | tee "$dir/manifest.txt"
  /usr/bin/time -f "backfill: %e s" sh -c "ls '$dir'/*.om | xargs -P 2 -I{} sh -c 'promtool tsdb create-blocks-from openmetrics -q {} \"$dir/tsdb\" >/dev/null && rm {}'"
fi
end=$(sed -n 's/^end //p' "$dir/manifest.txt")
port=$((20000 + $$ % 10000))
printf 'global:\n  scrape_interval: 1m\n' > "$dir/prometheus.yml"
prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/tsdb" --storage.tsdb.retention.time=10y \
  --storage.tsdb.min-block-duration=2h --storage.tsdb.max-block-duration=2h \
  --web.listen-address="127.0.0.1:$port" >"$dir/prometheus.log" 2>&1 &
pid=$!
trap 'kill $pid' EXIT
until curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null; do sleep 1; done
echo "prometheus $(prometheus --version 2>&1 | head -1 | cut -d' ' -f3) on $(ls "$dir/tsdb" | grep -c '^01') blocks; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
i=0
while [ $i -lt "$runs" ]; do
  /usr/bin/time -f "%e s wall, %U s user CPU, %M KiB peak RSS" -o "$dir/time.txt" \
    ./memdoctor rightsize --prometheus "http://127.0.0.1:$port" --until "$end" --range 14d --prometheus-timeout 10m --prometheus-deadline 30m --json >"$dir/result.json"
  python3 -c '
import json,sys,collections
r=json.load(open(sys.argv[1]))
v=collections.Counter(c["common_rule"]["verdict"] if not c.get("refused") else "refused" for c in r["containers"])
print("%d containers, %d queries; %s" % (len(r["containers"]), r["queries"], dict(v)))
' "$dir/result.json"
  cat "$dir/time.txt"
  i=$((i + 1))
done
