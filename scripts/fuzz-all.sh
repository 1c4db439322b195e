#!/bin/sh
# Runs every fuzz target of the project for DURATION each (default 20s).
# -fuzzminimizetime keeps the workers fuzzing instead of shrinking the large
# real seeds.
set -eu
dur=${1:-20s}
cd "$(dirname "$0")/.."
for pkg in $(go list ./...); do
  for f in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
    echo "== $pkg $f ($dur)"
    go test -run '^$' -fuzz "^$f\$" -fuzztime "$dur" -fuzzminimizetime 200x "$pkg"
  done
done
