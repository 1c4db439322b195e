#!/bin/sh
# go test of every package for `make test`, one at a time, and the kernel
# lab (./lab: Debian's kernel under qemu, about 10 of the run's minutes, most
# of them inside the emulated guest). The order:
#   1. cmd/memdoctor alone (the longest package, with the tests that count
#      samples or latencies);
#   2. the lab's watermark scenario alone: it counts kswapd's quick wake-ups
#      inside the emulated guest, which needs the CPUs (beside the other
#      packages it made 87 instead of the 100 its finding needs);
#   3. the lab's other scenarios (an OOM kill, dying cgroups, container
#      rules, the guest's promises: none measures time) beside the other
#      packages, their output in a log of their own printed once they end,
#      so that the two never interleave. cmd/memdoctor's waiting tests
#      (t.Parallel) stay in step 1: beside the lab and the packages the
#      recorders among them missed their samples and the preload
#      library's trims came too few.
# MEMDOCTOR_TEST_BESIDE, a shell command (make test's static checks: only
# compilers, no clock), starts with step 1 at the idle scheduling class
# (chrt --idle; else nice 19): it takes only CPU time the tests leave,
# which cmd/memdoctor's waiting and sampling tests leave plenty of, and a
# test's task that wakes takes the CPU from it at once. Its output is
# printed after the packages'. In the other orders it runs after
# everything.
# MEMDOCTOR_TEST_LAB=serial runs everything one at a time, the whole lab
# last; MEMDOCTOR_TEST_LAB=beside runs the whole lab beside every package
# (shortest, but both sides then measure time on shared CPUs: the
# recorder's connection-flood test lost samples of its 1 s interval). Go
# test flags given to this script select the serial order.
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
# One build of every package serves both the test binaries and the
# memdoctor binaries the tests build themselves (make build and make deb,
# the lab's static binary, the CLI tests' binary: all CGO_ENABLED=0, most
# -trimpath): with the same settings the build cache compiles each package
# once, not three times. memdoctor has no cgo.
export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-trimpath"
tmp=$(mktemp -d)
labpid=
stop() {
	# The lab's go test, its test binary and qemu are one process group
	# (setsid): an interrupted run ends them all. SIGTERM, since a shell
	# starts a background command with SIGINT ignored.
	[ -z "$labpid" ] && [ -s "$tmp/labpid" ] && labpid=$(cat "$tmp/labpid")
	[ -n "$labpid" ] && { kill -TERM "-$labpid" 2>/dev/null || kill -TERM "$labpid" 2>/dev/null; }
	if [ -s "$tmp/besidepid" ]; then
		b=$(cat "$tmp/besidepid")
		kill -TERM "-$b" 2>/dev/null || kill -TERM "$b" 2>/dev/null
	fi
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
cmd=$("$GO" list ./cmd/memdoctor) || exit 1
pkgs=$("$GO" list ./... | grep -vxF "$lab") || exit 1
mode=${MEMDOCTOR_TEST_LAB:-split}
[ $# -gt 0 ] && [ "$mode" = split ] && mode=serial
setsid=$(command -v setsid || true)
idle="nice -n 19"
chrt --idle 0 true 2>/dev/null && idle="chrt --idle 0"
watermark='^TestWatermarkThrash$'
case $mode in
serial)
	pkgs="$pkgs $lab" ;;
beside)
	$setsid "$GO" test -count=1 -timeout 40m "$@" "$lab" >"$tmp/lab.log" 2>&1 &
	labpid=$! ;;
*)
	pkgs=$(echo "$pkgs" | grep -vxF "$cmd") ;;
esac
# shellcheck disable=SC2086 # package paths hold no blanks
{
	if [ "$mode" = split ]; then
		if [ -n "${MEMDOCTOR_TEST_BESIDE:-}" ]; then
			# shellcheck disable=SC2086 # $idle is a command and its arguments
			$setsid $idle sh -c "$MEMDOCTOR_TEST_BESIDE" >"$tmp/beside.log" 2>&1 &
			echo $! >"$tmp/besidepid"
		fi
		"$GO" test -count=1 -timeout 40m "$cmd" &&
			"$GO" test -count=1 -timeout 40m -run "$watermark" "$lab" || { echo $? >"$tmp/rc"; exit; }
		$setsid "$GO" test -count=1 -timeout 40m -skip "$watermark" "$lab" >"$tmp/lab.log" 2>&1 &
		echo $! >"$tmp/labpid"
	fi
	"$GO" test -p 1 -count=1 -timeout 40m "$@" $pkgs 2>&1
	echo $? >"$tmp/rc"
	if [ -s "$tmp/besidepid" ]; then
		echo "=== $MEMDOCTOR_TEST_BESIDE ran beside the tests above, at the idle scheduling class; its output:"
		wait "$(cat "$tmp/besidepid")"
		echo $? >"$tmp/besiderc"
		rm -f "$tmp/besidepid"
		cat "$tmp/beside.log"
	elif [ -n "${MEMDOCTOR_TEST_BESIDE:-}" ] && [ "$mode" != split ]; then
		sh -c "$MEMDOCTOR_TEST_BESIDE"
		echo $? >"$tmp/besiderc"
	fi
	if [ -s "$tmp/labpid" ]; then
		# This shell started it, so this shell waits for it.
		echo "=== $lab's other scenarios ran beside the packages above; their output:"
		wait "$(cat "$tmp/labpid")"
		echo $? >"$tmp/labrc"
		rm -f "$tmp/labpid"
		cat "$tmp/lab.log"
	fi
} 2>&1 | tee "$tmp/log"
rc=$(cat "$tmp/rc")
[ -s "$tmp/besiderc" ] && [ "$rc" = 0 ] && rc=$(cat "$tmp/besiderc")
[ -s "$tmp/labrc" ] && [ "$rc" = 0 ] && rc=$(cat "$tmp/labrc")
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
