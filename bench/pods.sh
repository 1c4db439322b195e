#!/bin/sh
# Benchmark: `memdoctor diagnose --prometheus` over the same synthetic
# Kubernetes containers (cadvisor and kube-state-metrics names, NODES
# nodes x PODS pods, HOURS hours at a 5-minute scrape interval), once with
# each node's node_exporter MemTotal and node_uname_info beside them and
# once without (the hosts inferred from the container series), each
# backfilled with promtool into its own Prometheus. Reports, for each,
# wall time, queries, bytes received (from the JSON cost) and memdoctor's
# peak RSS (/usr/bin/time). Data is kept in $MEMDOCTOR_BENCH_DIR (default
# /tmp).
#
# usage: bench/pods.sh [NODES] [PODS] [HOURS] [RUNS]
set -eu
nodes=${1:-20}
pods=${2:-100}
hours=${3:-3}
runs=${4:-2}
cd "$(dirname "$0")/.."
go build -o ./memdoctor ./cmd/memdoctor
end=$(date -u -d '-3 hours' +%Y-%m-%dT%H:00:00Z)
for kind in with-node-exporter without; do
  dir=${MEMDOCTOR_BENCH_DIR:-/tmp}/memdoctor-pods-$nodes-$pods-$hours-$kind
  if [ ! -d "$dir/tsdb" ]; then
    rm -rf "$dir"
    flag=""
    [ "$kind" = with-node-exporter ] && flag=-node-exporter
    /usr/bin/time -f "generate: %e s" go run ./bench/genpods -o "$dir" -nodes "$nodes" -pods "$pods" -hours "$hours" -end "$end" $flag
    /usr/bin/time -f "backfill: %e s" sh -c "ls '$dir'/*.om | xargs -P 2 -I{} sh -c 'promtool tsdb create-blocks-from openmetrics -q {} \"$dir/tsdb\" >/dev/null && rm {}'"
    echo "$end" > "$dir/end"
  fi
  until=$(cat "$dir/end")
  port=$((20000 + ($$ + ${#kind}) % 10000))
  printf 'global:\n  scrape_interval: 1m\n' > "$dir/prometheus.yml"
  prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/tsdb" --storage.tsdb.retention.time=10y \
    --storage.tsdb.min-block-duration=2h --storage.tsdb.max-block-duration=2h \
    --web.listen-address="127.0.0.1:$port" >"$dir/prometheus.log" 2>&1 &
  pid=$!
  until curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null; do sleep 1; done
  echo "$kind: $nodes nodes x $pods pods, ${hours}h; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  i=0
  while [ $i -lt "$runs" ]; do
    /usr/bin/time -f "%e s wall, %U s user CPU, %M KiB peak RSS" -o "$dir/time.txt" \
      ./memdoctor diagnose --prometheus "http://127.0.0.1:$port" --until "$until" --range "${hours}h" --prometheus-timeout 5m --json >"$dir/result.json"
    python3 -c '
import json,sys
r=json.load(open(sys.argv[1])); c=r["cost"]
n=sum(1 for i in r["instances"] for f in i["findings"] if f["id"] in ("cgroup_near_limit","cgroup_oom_kills"))
print("%d hosts, %d judged, %d container findings; %d queries (%d scan), %.1f MB on the wire (%.1f MB decoded), %d samples; %.1f s" % (
  len(r["instances"]), r["suspects"], n, c["queries"], c["scan_queries"], c["wire_bytes"]/1e6, c["body_bytes"]/1e6, c["samples"], c["duration_seconds"]))
' "$dir/result.json"
    cat "$dir/time.txt"
    i=$((i + 1))
  done
  kill $pid
  wait $pid 2>/dev/null || true
done
