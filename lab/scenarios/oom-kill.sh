# Scenario 4: a cgroup with memory.max 64M and a process that outgrows it
# (hog 200: 200 MiB, one MiB at a time). memdoctor records at 1 s meanwhile;
# its own CPU time and peak RSS are written out (the lab's cost figures).
set -u
step() { read -r up _ < /proc/uptime; echo "step $up: $*" >&2; }
CG=/sys/fs/cgroup/oomtest
mkdir $CG
echo 64M > $CG/memory.max
step "record"
memdoctor record --db /tmp/md.db --interval 1s --listen '' 2> $OUT/record.err &
rec=$!
sleep 5
step "hog"
sh -c "echo \$\$ > $CG/cgroup.procs && exec hog 200 5" > $OUT/hog.out 2>&1
echo "hog exit $?" > $OUT/hog.exit
sleep 5
# The recorder's cost over its run: utime+stime (clock ticks) and peak RSS.
read -r up _ < /proc/uptime
echo "uptime $up" > $OUT/recorder.cost
awk '{ print "ticks", $14 + $15; print "start_ticks", $22 }' /proc/$rec/stat >> $OUT/recorder.cost
grep -E '^(VmHWM|VmRSS)' /proc/$rec/status >> $OUT/recorder.cost
getconf CLK_TCK > $OUT/clk_tck 2>/dev/null || echo 100 > $OUT/clk_tck
kill -TERM $rec
wait $rec
step "check"
cat $CG/memory.events > $OUT/memory.events
grep -E '^oom_kill ' /proc/vmstat > $OUT/vmstat.oom
timeout 2 cat /dev/kmsg > $OUT/kmsg
cat /proc/pressure/memory > $OUT/psi
memdoctor check --json > $OUT/check.json 2> $OUT/check.err
memdoctor diagnose --from /tmp/md.db --json > $OUT/diagnose.json 2> $OUT/diagnose.err
step done
