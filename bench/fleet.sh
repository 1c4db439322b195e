#!/bin/sh
# Benchmark: `memdoctor diagnose --prometheus` over a synthetic fleet of
# HOSTS hosts x 15 days at a 5-minute scrape interval (node_exporter
# names, 9 series per host), written by bench/genfleet straight into a
# local Prometheus' TSDB blocks and a local VictoriaMetrics' JSON import
# (Debian's packages both). Reports, per engine, wall time, queries,
# bytes received (from the JSON cost), memdoctor's CPU and peak RSS
# (/usr/bin/time) and the engine's CPU during the scan (its /proc
# counters). The fleet, its TSDB
# and VictoriaMetrics' data are generated once and kept in
# $MEMDOCTOR_BENCH_DIR (default /tmp). ENGINES (default "prometheus
# victoria-metrics") chooses the engines; one not installed is skipped.
# DEADLINE (default 30m) and TIMEOUT (default 60s) are the scan's
# --prometheus-deadline and --prometheus-timeout: at 10,000 hosts
# Prometheus on two-hour blocks needs more than the default 5m.
# BLOCK (default 18h) is the span of the TSDB's blocks: 18 hours is what a
# Prometheus at its default 15-day retention compacts its two-hour blocks
# into (its largest blocks are a tenth of the retention, in ranges of
# 2h x 3^n), so the scan reads a Prometheus as it runs; BLOCK=2h gives
# what promtool's backfill leaves before any compaction (181 blocks, each
# read by every query: several times Prometheus' CPU).
#
# usage: bench/fleet.sh [HOSTS] [RUNS]
set -eu
hosts=${1:-1000}
runs=${2:-3}
engines=${ENGINES:-prometheus victoria-metrics}
cd "$(dirname "$0")/.."
go build -o ./memdoctor ./cmd/memdoctor
block=${BLOCK:-18h}
dir=${MEMDOCTOR_BENCH_DIR:-/tmp}/memdoctor-fleet-$hosts-$block
want_vm=false
case " $engines " in *" victoria-metrics "*) command -v victoria-metrics >/dev/null && want_vm=true ;; esac
pids=""
trap 'for p in $pids; do kill $p 2>/dev/null || true; done' EXIT
port=$((20000 + $$ % 10000))
vport=$((port + 1))
start_vm() {
  victoria-metrics -storageDataPath="$dir/vmdata" -httpListenAddr="127.0.0.1:$vport" -retentionPeriod=100y \
    -search.disableCache -loggerLevel=WARN >>"$dir/victoria.log" 2>&1 &
  vpid=$!
  pids="$pids $vpid"
  until curl -sf "http://127.0.0.1:$vport/health" >/dev/null; do sleep 1; done
}
cputicks() { # PID: its user and system CPU so far, in clock ticks
  awk '{print $14 + $15}' "/proc/$1/stat"
}
scan() { # URL ENGINE-PID ENGINE: the last run's JSON is kept in result-ENGINE.json
  end=$(sed -n 's/^  "end": "\(.*\)",$/\1/p' "$dir/manifest.json")
  echo "$(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  i=0
  while [ $i -lt "$runs" ]; do
    t0=$(cputicks "$2")
    /usr/bin/time -f "%e s wall, %U s user and %S s system CPU, %M KiB peak RSS" -o "$dir/time.txt" \
      ./memdoctor diagnose --prometheus "$1" --until "$end" --range 14d --json \
      --prometheus-deadline "${DEADLINE:-30m}" --prometheus-timeout "${TIMEOUT:-60s}" >"$dir/result-$3.json"
    t1=$(cputicks "$2")
    python3 -c '
import json,sys
r=json.load(open(sys.argv[1])); c=r["cost"]
print("%d instances: aggregated scan %d queries in %.1f s; %d suspects fetched and judged; %d queries in all (%d split), %.1f MB on the wire (%.1f MB decoded), %d samples; %.1f s" % (
  len(r["instances"]), c["scan_queries"], c["scan_seconds"], r["suspects"], c["queries"], c.get("splits", 0), c["wire_bytes"]/1e6, c["body_bytes"]/1e6, c["samples"], c["duration_seconds"]))
' "$dir/result-$3.json"
    cat "$dir/time.txt"
    echo "engine: $(awk -v a="$t0" -v b="$t1" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", (b - a) / hz }') s of CPU during the scan"
    i=$((i + 1))
  done
}
vm_scanned=false
if [ ! -d "$dir/tsdb" ] || { $want_vm && [ ! -d "$dir/vmdata" ]; }; then
  rm -rf "$dir"
  mkdir -p "$dir"
  echo "generating $hosts hosts x 15 days at 5 min into $dir" >&2
  # genfleet writes the TSDB blocks itself (Prometheus' block writer, a
  # block per $block) and streams the same
  # samples into VictoriaMetrics' JSON import, the two at once.
  vmflag=""
  if $want_vm; then
    start_vm
    vmflag="-vm http://127.0.0.1:$vport"
  fi
  # bench/genfleet is a module of its own (Prometheus' TSDB brings cloud
  # SDKs memdoctor does not need): it is built, and its test that the
  # blocks and the import hold the OpenMetrics files' samples run, from
  # its directory.
  (cd bench/genfleet && go test -count=1 -run TestDirectRoutesSameSamples . >&2 && go build -o "$dir/genfleet" .)
  # shellcheck disable=SC2086 # vmflag is empty or two words
  /usr/bin/time -f "generate and import: %e s wall, %U s user CPU, %M KiB peak RSS" nice -n 5 "$dir/genfleet" -o "$dir" \
    -hosts "$hosts" -days 15 -interval 5m -chunk "$block" -end "$(date -u -d '-3 hours' +%Y-%m-%dT%H:00:00Z)" -tsdb "$dir/tsdb" $vmflag
  rm "$dir/genfleet"
  if $want_vm; then
    curl -sf "http://127.0.0.1:$vport/internal/force_flush" >/dev/null
    echo "victoria-metrics $(victoria-metrics -version 2>&1 | head -1)" >&2
    scan "http://127.0.0.1:$vport" "$vpid" victoria-metrics
    vm_scanned=true
    kill -INT "$vpid"
    wait "$vpid" || true
  fi
fi
for engine in $engines; do
  case $engine in
  prometheus)
    printf 'global:\n  scrape_interval: 1m\n' > "$dir/prometheus.yml"
    prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/tsdb" --storage.tsdb.retention.time=10y \
      --storage.tsdb.min-block-duration=2h --storage.tsdb.max-block-duration="$block" \
      --web.listen-address="127.0.0.1:$port" >"$dir/prometheus.log" 2>&1 &
    ppid=$!
    pids="$pids $ppid"
    until curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null; do sleep 1; done
    echo "prometheus $(prometheus --version 2>&1 | head -1 | cut -d' ' -f3) on $(ls "$dir/tsdb" | grep -c '^01') blocks" >&2
    scan "http://127.0.0.1:$port" "$ppid" prometheus
    kill "$ppid"
    wait "$ppid" || true
    ;;
  victoria-metrics)
    if ! $want_vm; then
      echo "victoria-metrics not installed: skipped" >&2
      continue
    fi
    if $vm_scanned; then
      continue
    fi
    start_vm
    echo "victoria-metrics $(victoria-metrics -version 2>&1 | head -1)" >&2
    scan "http://127.0.0.1:$vport" "$vpid" victoria-metrics
    kill -INT "$vpid"
    wait "$vpid" || true
    ;;
  *) echo "unknown engine $engine" >&2 ;;
  esac
done
