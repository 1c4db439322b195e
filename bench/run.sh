#!/bin/sh
# Runs every benchmark of this directory in turn, then the Go benchmarks,
# printing each one's own report under a heading (make bench). Each script
# also runs alone; their headers say what they measure and against which
# peer. Takes about an hour; BENCH="check fleet" runs only those.
#
# usage: bench/run.sh            (root: most need it)
set -u
cd "$(dirname "$0")/.."
all="check record store diagnose report ingest fleet cgroups trace alloc discover"
failed=""
for b in ${BENCH:-$all}; do
	echo "=== bench/$b.sh"
	if ! "bench/$b.sh"; then
		failed="$failed $b"
	fi
done
if [ -z "${BENCH:-}" ]; then
	echo "=== go test -bench"
	go test -run '^$' -bench . -benchtime 1x ./... || failed="$failed go-bench"
fi
if [ -n "$failed" ]; then
	echo "failed:$failed" >&2
	exit 1
fi
