# Scenario 2 (incident 3): in the 1 GB guest without swap, a reader streams
# a 1.5 GB file (sparse: page cache without disk I/O) while two processes
# allocate 24 MiB bursts (250 of them, 100 ms apart). Recorded at 1 s, once
# with watermark_scale_factor 10 and once with 200, the same workload;
# compare reads the two recordings. The recorder traces (BPF) who stalls in
# direct reclaim. Then, for certain stalls: with the page cache full, a
# process keeps 20 bursts of 24 MiB under SCHED_FIFO on the CPU kswapd is
# moved to (kswapd cannot run, so the bursts reclaim themselves), while a
# single cat streams a file in tmpfs (busy, allocating almost nothing); recorded
# with --trace, exported and diagnosed.
# PSI: check runs in the middle of the bursts, between two reads of
# /proc/pressure/memory; the file is read around each recording too.
set -u
step() { read -r up _ < /proc/uptime; echo "step $up: $*" >&2; }
# cost NAME PID: the recorder's CPU time (clock ticks) and peak RSS so far.
cost() {
  read -r up _ < /proc/uptime
  echo "uptime $up" > $OUT/recorder.cost.$1
  awk '{ print "ticks", $14 + $15; print "start_ticks", $22 }' /proc/$2/stat >> $OUT/recorder.cost.$1
  grep -E '^(VmHWM|VmRSS)' /proc/$2/status >> $OUT/recorder.cost.$1
}
getconf CLK_TCK > $OUT/clk_tck 2>/dev/null || echo 100 > $OUT/clk_tck
truncate -s 1536M /mnt/big
for WSF in 10 200; do
  echo $WSF > /proc/sys/vm/watermark_scale_factor
  echo 3 > /proc/sys/vm/drop_caches
  grep -E '^(kswapd_low_wmark_hit_quickly|allocstall_[a-z0-9]+|pgscan_direct) ' /proc/vmstat > $OUT/vm.before.$WSF
  step "wsf $WSF"
  cat /proc/pressure/memory > $OUT/psi.before.$WSF
  memdoctor record --trace --db $OUT/md-$WSF.db --interval 1s --listen '' 2> $OUT/rec-$WSF.err &
  rec=$!
  i=0; until grep -q recording $OUT/rec-$WSF.err || [ $i -gt 100 ]; do sleep 0.2; i=$((i + 1)); done
  cost $WSF.start $rec
  ( i=0; while [ $i -lt 6 ]; do cat /mnt/big > /dev/null; i=$((i + 1)); done ) &
  rd=$!
  burst 24 250 100 & b1=$!
  burst 24 250 100 & b2=$!
  sleep 12
  step "check during the bursts"
  cat /proc/pressure/memory > $OUT/psi.check.before.$WSF
  memdoctor check --json > $OUT/check-$WSF.json 2> $OUT/check-$WSF.err
  cat /proc/pressure/memory > $OUT/psi.check.after.$WSF
  wait $b1 $b2
  kill $rd 2>/dev/null; wait $rd 2>/dev/null
  cost $WSF $rec
  kill -TERM $rec; wait $rec
  cat /proc/pressure/memory > $OUT/psi.after.$WSF
  grep -E '^(kswapd_low_wmark_hit_quickly|allocstall_[a-z0-9]+|pgscan_direct) ' /proc/vmstat > $OUT/vm.after.$WSF
  memdoctor diagnose --from $OUT/md-$WSF.db --json > $OUT/diagnose-$WSF.json 2> $OUT/diagnose-$WSF.err
done
echo 10 > /proc/sys/vm/watermark_scale_factor
cat /mnt/big > /dev/null
dd if=/dev/zero of=/tmp/cached bs=1M count=48 2> /dev/null
grep -E '^allocstall_[a-z0-9]+ ' /proc/vmstat > $OUT/vm.before.rt
step "direct reclaim for certain"
memdoctor record --trace --db $OUT/md-rt.db --interval 1s --listen '' 2> $OUT/rec-rt.err &
rec=$!
i=0; until grep -q tracing $OUT/rec-rt.err || [ $i -gt 100 ]; do sleep 0.2; i=$((i + 1)); done
# One process that only reads (no fork per pass: a loop of cat would
# allocate for every new process).
set -- ; i=0; while [ $i -lt 400 ]; do set -- "$@" /tmp/cached; i=$((i + 1)); done
cat "$@" > /dev/null &
rd=$!
BURST_RT=1 BURST_KEEP=1 burst 24 20 0 2> $OUT/burst-rt.err
# The recorder stalls in direct reclaim too (most of the traced stalls in
# some runs) and takes no sample when it stops: 3 s at its 1 s interval so
# that a sample after the bursts holds their stalls.
sleep 3
kill $rd 2>/dev/null; wait $rd 2>/dev/null
kill -TERM $rec; wait $rec
grep -E '^allocstall_[a-z0-9]+ ' /proc/vmstat > $OUT/vm.after.rt
memdoctor export --from $OUT/md-rt.db --format openmetrics -o $OUT/rt.om 2> $OUT/export-rt.err
memdoctor diagnose --from $OUT/md-rt.db --json > $OUT/diagnose-rt.json 2> $OUT/diagnose-rt.err
memdoctor compare --json $OUT/md-10.db $OUT/md-200.db > $OUT/compare.json 2> $OUT/compare.err
memdoctor compare $OUT/md-10.db $OUT/md-200.db > $OUT/compare.txt 2>> $OUT/compare.err
step done
