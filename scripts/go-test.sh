#!/bin/sh
# go test of every package for `make test`, one at a time, the kernel lab
# (./lab: Debian's kernel under qemu, about 10 of the run's minutes, most of
# them inside the emulated guest) last. MEMDOCTOR_TEST_LAB=beside runs the
# lab beside the other packages instead, its output in a log of its own,
# printed once it ends, so that the two never interleave: shorter, but the
# emulated guest then shares the CPUs with the other tests, and both sides
# measure time. Measured on 2 CPUs: the watermark scenario made 87 quick
# kswapd wake-ups instead of the 100 its finding needs, and the recorder's
# connection-flood test lost samples of its 1 s interval.
#
# cmd/memdoctor, the longest package, runs its tests that only wait (marked
# t.Parallel) 8 at a time by itself (its TestMain); a -parallel given here
# decides instead, for every package.
#
# A package whose test binary died inside the Go runtime itself is run once
# more, and said so loudly: a SIGSEGV in the runtime's stack unwinder
# (runtime.(*unwinder).next, or "traceback did not unwind completely":
# golang/go#64030, open, no known cause in user code, seen here about once
# in ten loaded runs), or a goroutine that returned into its own stack
# ("unexpected return pc for runtime.sigpanic" after a fault at the pc:
# golang/go#52548, open; seen once here, in goroutine 1 between two tests).
# Any other failure fails at once (a package with a failed test besides
# the crash is not run again).
#
# usage: GO=go scripts/go-test.sh [go test flags...]
set -u
GO=${GO:-go}
tmp=$(mktemp -d)
labpid=
stop() {
	# The lab's go test, its test binary and qemu are one process group
	# (setsid): an interrupted run ends them all. SIGTERM, since a shell
	# starts a background command with SIGINT ignored.
	[ -n "$labpid" ] && { kill -TERM "-$labpid" 2>/dev/null || kill -TERM "$labpid" 2>/dev/null; }
	rm -rf "$tmp"
}
trap stop EXIT
trap 'stop; exit 130' INT TERM

# Every test binary is built first, as many at a time as there are CPUs:
# the runs below (one package at a time, and with -p 1 also compiled one
# package at a time, between two runs) then find every package compiled in
# the build cache and only link. A package that does not build fails
# below, with its errors.
"$GO" test -c -o "$tmp/bin/" "$@" ./... >"$tmp/build.log" 2>&1
rm -rf "$tmp/bin"

lab=$("$GO" list ./lab) || exit 1
pkgs=$("$GO" list ./... | grep -vxF "$lab") || exit 1
if [ "${MEMDOCTOR_TEST_LAB:-serial}" != beside ]; then
	pkgs="$pkgs $lab"
else
	setsid=$(command -v setsid || true)
	$setsid "$GO" test -count=1 -timeout 40m "$@" "$lab" >"$tmp/lab.log" 2>&1 &
	labpid=$!
fi
# shellcheck disable=SC2086 # package paths hold no blanks
{ "$GO" test -p 1 -count=1 -timeout 40m "$@" $pkgs 2>&1; echo $? >"$tmp/rc"; } | tee "$tmp/log"
rc=$(cat "$tmp/rc")
if [ -n "$labpid" ]; then
	echo "=== $lab ran beside the packages above; its output:"
	wait "$labpid"
	labrc=$?
	labpid=
	cat "$tmp/lab.log"
	cat "$tmp/lab.log" >>"$tmp/log"
	[ "$rc" = 0 ] && rc=$labrc
fi
[ "$rc" = 0 ] && exit 0

# Split the log by package (each package's output ends with its ok/FAIL
# line: the packages above ran one at a time, the lab's log follows them)
# and classify each FAIL.
awk -v dir="$tmp" '
	{ buf = buf $0 "\n" }
	/^(ok|FAIL|\?)[ \t]+[^ \t]+/ && $2 ~ /\// {
		if ($1 == "FAIL") {
			crash = (buf ~ /runtime\.\(\*unwinder\)\.next/ || buf ~ /traceback did not unwind completely/ || buf ~ /unexpected return pc for runtime\.sigpanic called from/) && buf !~ /--- FAIL/
			print $2 > (dir "/" (crash ? "crashed" : "failed"))
		}
		buf = ""
	}' "$tmp/log"
if [ -s "$tmp/failed" ] || [ ! -s "$tmp/crashed" ]; then
	exit "$rc"
fi
for pkg in $(sort -u "$tmp/crashed"); do
	echo "=== $pkg: its test binary crashed in the Go runtime's unwinder (golang/go#64030); running it once more" >&2
	"$GO" test -count=1 -timeout 40m "$@" "$pkg" || exit 1
done
echo "=== passed after re-running: $(sort -u "$tmp/crashed" | tr '\n' ' ')(Go runtime crash, golang/go#64030)" >&2
