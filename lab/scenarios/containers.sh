# Scenario 5: a systemd-like and a Kubernetes-like hierarchy with limits,
# and one workload per behaviour the cgroup rules judge:
#   /system.slice/cache.service      memory.high 48M: reads 150M of file
#                                    once (page cache over memory.high;
#                                    reclaimed in time: quiet)
#   /system.slice/anon.service       memory.max 64M: holds 60M of anon
#                                    (cgroup_near_limit)
#   /system.slice/throttled.service  memory.high 32M, memory.max 256M:
#                                    allocates and frees 48M in a loop
#                                    (cgroup_memory_high_throttled)
#   .../kubepods-burstable-pod<uid>.slice/cri-containerd-<A>.scope
#                                    memory.max 64M: grows to 200M and is
#                                    killed (cgroup_oom_kills)
#   .../kubepods-burstable-pod<uid>.slice/cri-containerd-<B>.scope
#                                    memory.max 48M: holds 38M of anon; one
#                                    task re-reads a 24M file that does not
#                                    fit beside it, two rewrite 64M files
#                                    (cgroup_memory_pressure)
# memdoctor records at 2 s meanwhile; then check, capture and diagnose.
# SECS: how long the stalling workloads run while recorded (default 60:
# the kernel's avg60 needs about that long to reach the stall's level).
set -u
SECS=${SECS:-60}
step() { read -r up _ < /proc/uptime; echo "step $up: $*" >&2; }
R=/sys/fs/cgroup
SYS=$R/system.slice
POD=$R/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod3b7e1c2a_94d0_4f8e_a1b2_6c5d4e3f2a1b.slice
A=$POD/cri-containerd-1f2e3d4c5b6a79880716253443526170f1e2d3c4b5a6978879605a4b3c2d1e0f.scope
B=$POD/cri-containerd-9a8b7c6d5e4f30211203f4e5d6c7b8a99a8b7c6d5e4f30211203f4e5d6c7b8a9.scope
# run_in CG CMD...: runs CMD in cgroup CG (in the background with &).
run_in() { cg=$1; shift; sh -c "echo \$\$ > $cg/cgroup.procs && exec $*"; }

step "files"
dd if=/dev/zero of=/mnt/cache.dat bs=1M count=150 status=none
dd if=/dev/zero of=/mnt/reread.dat bs=1M count=24 status=none
sync
echo 3 > /proc/sys/vm/drop_caches

step "hierarchy"
mkdir -p $SYS $POD
for d in $SYS $R/kubepods.slice $R/kubepods.slice/kubepods-burstable.slice $POD; do
  echo +memory > $d/cgroup.subtree_control
done
for d in cache anon throttled; do mkdir $SYS/$d.service; done
mkdir $A $B
echo 48M > $SYS/cache.service/memory.high
echo 64M > $SYS/anon.service/memory.max
echo 32M > $SYS/throttled.service/memory.high
echo 256M > $SYS/throttled.service/memory.max
echo 64M > $A/memory.max
echo 48M > $B/memory.max

step "page cache over memory.high, anon near memory.max, OOM kill"
run_in $SYS/cache.service cat /mnt/cache.dat > /dev/null
run_in $SYS/anon.service hog 60 > $OUT/anon.out 2>&1 &
run_in $A hog 200 > $OUT/oom.out 2>&1
echo "oom hog exit $?" >> $OUT/oom.out
sleep 2
memdoctor capture --top 5 -o $OUT/quiet.txtar --note "lab: systemd-like and Kubernetes-like cgroups: page cache over memory.high, anon near memory.max, one OOM kill; nothing stalls" 2> $OUT/capture.err
memdoctor check --json > $OUT/quiet.json 2> $OUT/quiet.err

step "throttling and stalls, recorded"
memdoctor record --db /tmp/md.db --interval 2s --listen '' 2> $OUT/record.err &
rec=$!
sleep 3
run_in $SYS/throttled.service burst 48 1000000 0 > $OUT/burst.out 2>&1 &
thr=$!
run_in $B hog 38 > $OUT/pressure-hog.out 2>&1 &
ph=$!
sleep 2
run_in $B sh -c "'while :; do cat /mnt/reread.dat > /dev/null; done'" &
rd=$!
run_in $B sh -c "'while :; do dd if=/dev/zero of=/mnt/write1.dat bs=1M count=64 conv=notrunc status=none; done'" &
rd2=$!
run_in $B sh -c "'while :; do dd if=/dev/zero of=/mnt/write2.dat bs=1M count=64 conv=notrunc status=none; done'" &
rd3=$!
sleep "$SECS"
step "check, capture, diagnose"
memdoctor check --json > $OUT/stalled.json 2> $OUT/stalled.err
memdoctor capture --top 5 -o $OUT/stalled.txtar --note "lab: a service allocating 48M in a loop under memory.high 32M, a container at memory.max 48M with 38M of anon re-reading a 24M file and rewriting two of 64M" 2>> $OUT/capture.err
memdoctor check --cgroup throttled.service --json > $OUT/focus.json 2> $OUT/focus.err
echo "focus exit $?" >> $OUT/focus.err
memdoctor check --cgroup throtled.service > $OUT/nomatch.out 2> $OUT/nomatch.err
echo "nomatch exit $?" >> $OUT/nomatch.err
for f in memory.events memory.events.local memory.pressure memory.current memory.stat; do
  for c in throttled:$SYS/throttled.service cache:$SYS/cache.service pressure:$B; do
    cat ${c#*:}/$f > $OUT/${c%%:*}.$f 2>/dev/null
  done
done
sleep 2
kill -TERM $rec
wait $rec
memdoctor diagnose --from /tmp/md.db --json > $OUT/diagnose.json 2> $OUT/diagnose.err
# Every workload ends (cgroup.kill, 5.14+) so that the data disk unmounts
# cleanly: what only the journal holds is not read back.
for c in $SYS/throttled.service $SYS/anon.service $B; do echo 1 > $c/cgroup.kill; done
wait $thr $ph $rd $rd2 $rd3 2>/dev/null
timeout 2 cat /dev/kmsg > $OUT/kmsg
step done
