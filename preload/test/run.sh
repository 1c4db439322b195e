#!/bin/sh
# C tests of libmemdoctor_preload.so on real programs (run by `make -C preload test`).
#
#   unit     parsers, JSON/time formatting, heap counter, bootstrap of the real free
#   idle     no variable set: no thread, no output, program unchanged
#   (a)      interval: alloc_workload hoard 8x64 MiB x4, RSS 2 intervals after
#            the rounds at least 60% below the run without the library
#   (b)      freed threshold: trim events with trigger "freed" and rss.diff > 0
#   (c)      request protocol: info, trim and a bad request; XML parses and its
#            <heap> count matches "arenas"; summary lines; every line is JSON
#   (d)      fork with and without exec from a multithreaded parent; the
#            children that did not exec trim in their own thread and file
#   (e)      16 threads malloc/free for 10 s, MEMDOCTOR_TRIM_FREED=4MiB, stats
#            on and requests coming in: no deadlock (timeout), no crash
#   (f)      bad values: one "memdoctor-preload:" line each, program unchanged
#   (g)      after another preloaded allocator (jemalloc, if installed): frees
#            go to it, not to glibc
#   (h)      heap profile: leak_workload leaks 64 MiB on one path and frees as
#            much on another; the dump's largest in-use stack is within 10%
#            of the 64 MiB, every other stack holds less than 2% of that
#            (stdio's buffers are live)
#   (i)      profile safety: profsafe (threads allocating with every function,
#            300 fork+exec, SIGALRM every 2 ms, dlopen) prints the same
#            with sampling every 4 KiB as without the library
#   (j)      one indirect branch per malloc and per free inside the library,
#            sampling or not (jumpcount single-steps a child with ptrace)
#
# Needs cc and python3 (JSON/XML checks). Prints "ok"/"FAIL" per test and
# exits 1 if any failed.
set -u
cd "$(dirname "$0")/.." || exit 2
CC=${CC:-cc}
LIB=$PWD/libmemdoctor_preload.so
BIN=$PWD/test/bin
PROGRAMS=$PWD/../testdata/programs
TMP=$(mktemp -d "${TMPDIR:-/tmp}/memdoctor-preload-test.XXXXXX")
failed=0
wl_pid=""

cleanup() {
  [ -n "$wl_pid" ] && kill "$wl_pid" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

ok() { echo "ok   $1"; }
fail() { echo "FAIL $1: $2"; failed=1; }

command -v python3 >/dev/null 2>&1 || { echo "FAIL setup: python3 is needed for the JSON/XML checks (apt-get install python3)"; exit 1; }
[ -f "$LIB" ] || { echo "FAIL setup: $LIB not built (make -C preload)"; exit 1; }

mkdir -p "$BIN"
build() { # build NAME SOURCE [extra flags]
  name=$1; src=$2; shift 2
  # shellcheck disable=SC2068
  $CC -O2 -g -Wall -Wextra -std=gnu11 -fno-builtin -pthread -o "$BIN/$name" "$src" "$@" || {
    echo "FAIL setup: cannot build $name"; exit 1; }
}
build unit test/unit.c src/preload.c src/parse.c src/format.c src/profile.c -DMD_TEST_HOOKS -ldl -lm
build forker test/forker.c
build stress test/stress.c
build alloc_workload "$PROGRAMS/alloc_workload.c"
build profsafe test/profsafe.c -ldl
build jumpcount test/jumpcount.c
$CC -O1 -fno-omit-frame-pointer -pthread -o "$BIN/leak_workload" "$PROGRAMS/leak_workload.c" || {
  echo "FAIL setup: cannot build leak_workload"; exit 1; }

# ---- helpers for a workload that reads commands on stdin ----

# wl_start NAME CMD...: start CMD with stdin from a FIFO (fd 3 writes to it),
# stdout in $TMP/NAME.out, stderr in $TMP/NAME.err; sets wl_pid.
wl_start() {
  wl_name=$1; shift
  rm -f "$TMP/$wl_name.in"
  mkfifo "$TMP/$wl_name.in"
  "$@" < "$TMP/$wl_name.in" > "$TMP/$wl_name.out" 2> "$TMP/$wl_name.err" &
  wl_pid=$!
  exec 3> "$TMP/$wl_name.in"
}

# wl_wait_ready N: wait (60 s at most) until the workload printed N ready lines.
wl_wait_ready() {
  i=0
  while [ "$(grep -c '^ready ' "$TMP/$wl_name.out")" -lt "$1" ]; do
    i=$((i + 1))
    if [ $i -gt 600 ] || ! kill -0 "$wl_pid" 2>/dev/null; then
      return 1
    fi
    sleep 0.1
  done
}

# wl_rss_kb N: rss_kb of the Nth ready line.
wl_rss_kb() {
  grep '^ready ' "$TMP/$wl_name.out" | sed -n "$1p" | sed 's/.*"rss_kb":\([0-9]*\).*/\1/'
}

# wl_stop: send exit, wait; returns the exit status.
wl_stop() {
  echo exit >&3
  exec 3>&-
  wait "$wl_pid"
  rc=$?
  wl_pid=""
  return $rc
}

# Programs run as `env LD_PRELOAD="$LIB" VAR=... PROGRAM`: env(1) itself does
# not load the library (LD_PRELOAD only reaches the program it execs), and
# the pid of the background job is the program's.

# json FILE PYTHON: run a python check over the stats file; "ev" is the list
# of events (every line must parse). The check prints a reason and exits 1.
json() {
  python3 - "$1" "$2" <<'PY'
import json, re, sys
path, check = sys.argv[1], sys.argv[2]
ev = []
for n, line in enumerate(open(path), 1):
    try:
        e = json.loads(line)
    except ValueError as err:
        print(f"line {n} is not JSON ({err}): {line!r}"); sys.exit(1)
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", e.get("time", "")):
        print(f"line {n}: bad time {e.get('time')!r}"); sys.exit(1)
    ev.append(e)
def need(cond, msg):
    if not cond:
        print(msg); sys.exit(1)
exec(check)
PY
}

# ---- unit ----
if out=$("$BIN/unit" 2>&1); then ok "unit"; else fail "unit" "$out"; fi

# ---- idle: nothing set ----
wl_start idle env LD_PRELOAD="$LIB" "$BIN/alloc_workload" hoard 4 8 1
if wl_wait_ready 1; then
  tasks=$(ls "/proc/$wl_pid/task" | wc -l)
  wl_stop; rc=$?
  if [ "$tasks" -ne 5 ]; then fail "idle" "$tasks threads, want 5 (main + 4 workers, no library thread)"
  elif [ -s "$TMP/idle.err" ]; then fail "idle" "stderr: $(cat "$TMP/idle.err")"
  elif [ $rc -ne 0 ]; then fail "idle" "exit status $rc"
  else ok "idle: no thread, no output"; fi
else fail "idle" "workload not ready: $(cat "$TMP/idle.err")"; wl_stop; fi

# ---- (a) interval ----
wl_start base "$BIN/alloc_workload" hoard 8 64 4
wl_wait_ready 1 || fail "(a)" "baseline workload not ready"
base=$(wl_rss_kb 1)
wl_stop
wl_start interval env LD_PRELOAD="$LIB" MEMDOCTOR_TRIM_INTERVAL=1s "$BIN/alloc_workload" hoard 8 64 4
if wl_wait_ready 1; then
  tasks=$(ls "/proc/$wl_pid/task" | wc -l)
  sleep 2.2                      # two intervals after the rounds end
  echo info >&3; wl_wait_ready 2
  echo more >&3; wl_wait_ready 3  # one more round: bounded again after it
  sleep 2.2
  echo info >&3; wl_wait_ready 4
  wl_stop; rc=$?
  r2=$(wl_rss_kb 2); r4=$(wl_rss_kb 4)
  if [ $rc -ne 0 ]; then fail "(a)" "exit status $rc"
  elif [ "$tasks" -ne 10 ]; then fail "(a)" "$tasks threads, want 10 (main + 8 + the library's)"
  elif [ $((r2 * 100)) -gt $((base * 40)) ] || [ $((r4 * 100)) -gt $((base * 40)) ]; then
    fail "(a)" "RSS ${r2} kB and ${r4} kB two intervals after the rounds, ${base} kB without the library: want at least 60% lower"
  else ok "(a) interval: RSS ${base} kB without, ${r2} kB / ${r4} kB with (-$(( (base - r2) * 100 / base ))%)"; fi
else fail "(a)" "workload not ready: $(cat "$TMP/interval.err")"; wl_stop; fi

# ---- (b) freed threshold ----
wl_start freed env LD_PRELOAD="$LIB" MEMDOCTOR_TRIM_FREED=64MiB MEMDOCTOR_STATS="$TMP/freed.jsonl" "$BIN/alloc_workload" hoard 8 64 4
if wl_wait_ready 1; then
  wl_stop; rc=$?
  r1=$(wl_rss_kb 1)
  if [ $rc -ne 0 ]; then fail "(b)" "exit status $rc"
  elif why=$(json "$TMP/freed.jsonl" '
t = [e for e in ev if e["event"] == "trim"]
need(t, "no trim events")
need(all(e["trigger"] == "freed" for e in t), "a trim with another trigger: %r" % {e["trigger"] for e in t})
need(all(e["freedBytes"] >= 64 << 20 for e in t), "a trim before 64 MiB were freed: %r" % min(e["freedBytes"] for e in t))
need(sum(e["rss"]["diff"] > 0 for e in t) >= len(t) // 2, "rss.diff not positive: %r" % [e["rss"]["diff"] for e in t])
for k in ("arena","ordblks","hblks","hblkhd","uordblks","fordblks","keepcost"):
    need(k in t[0]["mallinfo2"], "mallinfo2 lacks " + k)
need(t[0]["arenas"] >= 2, "arenas %r" % t[0]["arenas"])
print(len(t), "trims, released", sum(e["rss"]["diff"] for e in t) >> 20, "MiB")
'); then
    ok "(b) freed threshold: $why; RSS ${r1} kB at the end, ${base} kB without"
  else fail "(b)" "$why"; fi
else fail "(b)" "workload not ready: $(cat "$TMP/freed.err")"; wl_stop; fi

# ---- (c) request protocol ----
# request STATS ACTION ID: write the request atomically, wait for it to be removed.
request() {
  printf '%s %s\n' "$2" "$3" > "$1.request.tmp" && mv "$1.request.tmp" "$1.request"
  i=0
  while [ -e "$1.request" ]; do
    i=$((i + 1)); [ $i -gt 100 ] && return 1
    sleep 0.1
  done
}
wl_start req env LD_PRELOAD="$LIB" MEMDOCTOR_STATS="$TMP/req.%p.jsonl" MEMDOCTOR_STATS_INTERVAL=1s "$BIN/alloc_workload" hoard 4 32 2
if wl_wait_ready 1; then
  st="$TMP/req.$wl_pid.jsonl"
  good=1
  request "$st" info r-info || { fail "(c)" "info request not served within 10 s"; good=0; }
  [ $good = 1 ] && cp "$st.malloc_info.xml" "$TMP/info.xml"
  request "$st" trim r-trim || { fail "(c)" "trim request not served within 10 s"; good=0; }
  request "$st" frobnicate r-bad || { fail "(c)" "bad request not removed within 10 s"; good=0; }
  sleep 1.2
  wl_stop || { fail "(c)" "workload exit status $?"; good=0; }
  if [ $good = 1 ]; then
    if why=$(json "$st" '
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1].rsplit("/", 1)[0] + "/info.xml").getroot()
need(root.tag == "malloc" and root.get("version") == "1", "XML root %r" % root.tag)
heaps = root.findall("heap")
info = [e for e in ev if e["event"] == "info" and e.get("request") == "r-info"]
need(len(info) == 1, "want one info line for r-info, got %d" % len(info))
need(info[0]["trigger"] == "request" and info[0]["arenas"] == len(heaps), "arenas %r, XML has %d heaps" % (info[0]["arenas"], len(heaps)))
need(info[0]["xml"].endswith(".malloc_info.xml"), "xml path %r" % info[0].get("xml"))
tr = [e for e in ev if e["event"] == "trim" and e.get("request") == "r-trim"]
need(len(tr) == 1 and tr[0]["trigger"] == "request", "want one trim line for r-trim: %r" % tr)
need(tr[0]["rss"]["diff"] > 0, "request trim released nothing: %r" % tr[0]["rss"])
er = [e for e in ev if e["event"] == "error" and e.get("request") == "r-bad"]
need(len(er) == 1 and "frobnicate" in er[0]["error"], "want one error line for r-bad: %r" % er)
need(ev[0]["event"] == "start" and ev[0]["config"]["statsIntervalMs"] == 1000, "first line %r" % ev[0])
need(sum(e["event"] == "summary" for e in ev) >= 2, "fewer than 2 summary lines")
print("%d heaps in the XML, request trim released %d MiB" % (len(heaps), tr[0]["rss"]["diff"] >> 20))
'); then ok "(c) request protocol: $why"; else fail "(c)" "$why"; fi
    [ -e "$st.malloc_info.xml.tmp" ] && fail "(c)" "temporary XML left behind"
  fi
else fail "(c)" "workload not ready: $(cat "$TMP/req.err")"; wl_stop; fi

# ---- (d) fork ----
mkdir "$TMP/fork"
if out=$(timeout 120 env LD_PRELOAD="$LIB" MEMDOCTOR_TRIM_INTERVAL=100ms MEMDOCTOR_TRIM_FREED=4MiB \
    MEMDOCTOR_STATS="$TMP/fork/s.%p.jsonl" "$BIN/forker" 6 2>&1); then
  pids=${out#forker: ok }
  nfiles=$(ls "$TMP/fork" | wc -l)
  bad=""
  for p in $pids; do
    f="$TMP/fork/s.$p.jsonl"
    if [ ! -s "$f" ]; then bad="$bad no stats for child $p;"; continue; fi
    why=$(json "$f" '
need(ev[0]["event"] == "start" and ev[0]["pid"] == int(sys.argv[1].split(".")[-2]), "first line %r" % ev[0])
need(all(e["pid"] == ev[0]["pid"] for e in ev), "lines of another process")
need(any(e["event"] == "trim" and e["trigger"] == "interval" for e in ev), "no interval trim in the child")
') || bad="$bad child $p: $why;"
  done
  # 1 parent + 6 children without exec + 6 exec'd children
  if [ "$nfiles" -ne 13 ]; then fail "(d)" "$nfiles stats files, want 13"
  elif [ -n "$bad" ]; then fail "(d)" "$bad"
  else ok "(d) fork: 6 forks without exec (own thread, own stats, interval trims), 6 with exec"; fi
else fail "(d)" "forker failed (status $?): $out"; fi

# ---- (e) stress ----
(
  # requests during the stress, served by the background thread
  i=0
  while [ $i -lt 16 ]; do
    sleep 0.5
    printf 'info s%d\n' $i > "$TMP/stress.jsonl.request.tmp" && mv "$TMP/stress.jsonl.request.tmp" "$TMP/stress.jsonl.request"
    i=$((i + 1))
  done
) &
req_pid=$!
start=$(date +%s)
out=$(timeout 60 env LD_PRELOAD="$LIB" MEMDOCTOR_TRIM_FREED=4MiB MEMDOCTOR_TRIM_INTERVAL=100ms \
    MEMDOCTOR_STATS="$TMP/stress.jsonl" "$BIN/stress" 16 10 2>&1)
rc=$?
wait $req_pid
took=$(( $(date +%s) - start ))
if [ $rc -eq 124 ]; then fail "(e)" "deadlock: still running after 60 s"
elif [ $rc -ne 0 ]; then fail "(e)" "status $rc: $out"
elif why=$(json "$TMP/stress.jsonl" '
f = sum(e["event"] == "trim" and e["trigger"] == "freed" for e in ev)
i = sum(e["event"] == "trim" and e["trigger"] == "interval" for e in ev)
r = sum(e["event"] == "info" for e in ev)
need(f >= 100, "only %d freed trims" % f)
need(i >= 10, "only %d interval trims (starved?)" % i)
need(r >= 5, "only %d requests served" % r)
print("%d freed trims, %d interval trims, %d requests served" % (f, i, r))
'); then ok "(e) stress: 16 threads, 10 s, ${took} s wall, ${out#stress: ok } ops, $why"
else fail "(e)" "$why"; fi

# ---- (f) bad values ----
wl_start bad env LD_PRELOAD="$LIB" MEMDOCTOR_TRIM_INTERVAL=30 MEMDOCTOR_TRIM_FREED=1XB \
  MEMDOCTOR_STATS=/nonexistent/dir/s.jsonl MEMDOCTOR_STATS_INTERVAL=soon "$BIN/alloc_workload" healthy 2 1 1
if wl_wait_ready 1; then
  tasks=$(ls "/proc/$wl_pid/task" | wc -l)
  wl_stop; rc=$?
  lines=$(wc -l < "$TMP/bad.err")
  others=$(grep -vc '^memdoctor-preload: ' "$TMP/bad.err")
  if [ $rc -ne 0 ]; then fail "(f)" "exit status $rc"
  elif [ "$lines" -ne 4 ] || [ "$others" -ne 0 ]; then fail "(f)" "want 4 memdoctor-preload: lines, got: $(cat "$TMP/bad.err")"
  elif ! grep -q 'MEMDOCTOR_TRIM_INTERVAL="30": want a duration' "$TMP/bad.err" ||
       ! grep -q 'MEMDOCTOR_TRIM_FREED="1XB": want a size' "$TMP/bad.err" ||
       ! grep -q 'MEMDOCTOR_STATS_INTERVAL="soon"' "$TMP/bad.err" ||
       ! grep -q 'cannot open /nonexistent/dir/s.jsonl: No such file or directory; stats disabled' "$TMP/bad.err"; then
    fail "(f)" "messages: $(cat "$TMP/bad.err")"
  elif [ "$tasks" -ne 3 ]; then fail "(f)" "$tasks threads, want 3 (everything disabled: no library thread)"
  else ok "(f) bad values: one line each, features off, program ran normally"; fi
else fail "(f)" "workload not ready: $(cat "$TMP/bad.err")"; wl_stop; fi
out=$(env LD_PRELOAD="$LIB" MEMDOCTOR_TRIM_FREED=lots sh -c 'echo hello' 2>"$TMP/sh.err")
if [ "$out" = hello ] && [ "$(cat "$TMP/sh.err")" = 'memdoctor-preload: MEMDOCTOR_TRIM_FREED="lots": want a size such as 64MiB or 1GiB; trimming on free disabled' ]; then
  ok "(f) sh -c under a bad value: output intact, one message"
else fail "(f)" "sh: stdout '$out', stderr '$(cat "$TMP/sh.err")'"; fi

# ---- (g) another allocator after us ----
je=""
for d in /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib64 /usr/lib; do
  [ -e "$d/libjemalloc.so.2" ] && { je="$d/libjemalloc.so.2"; break; }
done
if [ -z "$je" ]; then
  echo "skip (g): libjemalloc.so.2 not installed (apt-get install libjemalloc2)"
elif out=$(echo exit | timeout 60 env LD_PRELOAD="$LIB $je" MEMDOCTOR_TRIM_FREED=4MiB "$BIN/alloc_workload" hoard 4 16 2 2>&1) &&
     echo "$out" | grep -q '"arena":0,'; then
  ok "(g) with jemalloc preloaded after us: frees reach jemalloc"
else fail "(g)" "$out"; fi

# ---- (h) heap profile ----
mkdir "$TMP/prof"
if out=$(printf 'leak 64\nexit\n' | timeout 60 env LD_PRELOAD="$LIB" MEMDOCTOR_PROFILE=64KiB \
    MEMDOCTOR_PROFILE_PATH="$TMP/prof/heap.%p" "$BIN/leak_workload" 2>&1); then
  leaked=$(echo "$out" | sed -n 's/^ready leaked=\([0-9]*\) .*/\1/p' | head -1)
  if why=$(python3 - "$TMP/prof" "$leaked" <<'PY'
import os, sys
d, leaked = sys.argv[1], int(sys.argv[2])
files = os.listdir(d)
if len(files) != 1: print("want one dump, got %r" % files); sys.exit(1)
lines = open(os.path.join(d, files[0])).read().split("\n")
if lines[0] != "memdoctor heap profile 1": print("header %r" % lines[0]); sys.exit(1)
st = sorted((int(l.split()[4]), len(l.split()) - 5) for l in lines if l.startswith("stack "))
if len(st) < 2: print("want the leaking and the healthy stacks: %r" % st); sys.exit(1)
top, depth = st[-1]
if abs(top - leaked) > leaked / 10: print("top stack holds %d, the workload leaked %d" % (top, leaked)); sys.exit(1)
if any(b > leaked / 50 for b, _ in st[:-1]): print("other stacks hold bytes: %r" % st); sys.exit(1)
if depth < 3: print("top stack has %d frames" % depth); sys.exit(1)
print("in use %d MiB on the top stack (%d frames), the workload counts %d MiB" % (top >> 20, depth, leaked >> 20))
PY
  ); then ok "(h) heap profile: $why"; else fail "(h)" "$why"; fi
else fail "(h)" "leak_workload failed (status $?): $out"; fi

# ---- (i) profile safety ----
want=$("$BIN/profsafe" 2 300 400000 2>&1)
got=$(timeout 120 env LD_PRELOAD="$LIB" MEMDOCTOR_PROFILE=4KiB MEMDOCTOR_PROFILE_PATH="$TMP/prof/safe.%p" \
  "$BIN/profsafe" 2 300 400000 2>&1)
rc=$?
if [ $rc -eq 124 ]; then fail "(i)" "deadlock: still running after 120 s"
elif [ $rc -ne 0 ] || [ "$got" != "$want" ]; then fail "(i)" "status $rc, output: $got; want: $want"
else ok "(i) profile safety: output unchanged under 300 fork+exec, signals and dlopen"; fi

# ---- (j) indirect branches per malloc+free pair ----
# 1GiB: sampling on, but none of the 8 pairs' 800 bytes comes due.
for prof in "" 1GiB; do
  out=$(env LD_PRELOAD="$LIB" MEMDOCTOR_PROFILE="$prof" MEMDOCTOR_PROFILE_PATH="$TMP/prof/jump.%p" \
    "$BIN/jumpcount" 8 2>&1)
  case $out in
  "jumpcount: skipped"*) ok "(j) ${out#jumpcount: }" ;;
  "jumpcount: 16 indirect branches,"*) ok "(j) ${prof:-not sampling}: ${out#jumpcount: }" ;;
  *) fail "(j)" "${prof:-not sampling}: want 16 indirect branches for 8 pairs (one per call): $out" ;;
  esac
done

if [ $failed -ne 0 ]; then
  echo "preload tests: FAILED"
  exit 1
fi
echo "preload tests: ok"
