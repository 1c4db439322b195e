# Scenario 1: a job runner that makes one memory cgroup per job below
# /sys/fs/cgroup/jobs and writes page cache in it.
#   healthy: each job deletes its scratch file before its cgroup is removed
#   leaky:   each job's cgroup is removed while its cache lives on
# then memdoctor's remedy is applied (memdoctor reclaim --apply).
# JOBS jobs per phase (default 150), KIB KiB of cache each (default 256).
set -u
JOBS=${JOBS:-150}
KIB=${KIB:-256}
CG=/sys/fs/cgroup/jobs
step() { read -r up _ < /proc/uptime; echo "step $up: $*" >&2; }
mkdir $CG /mnt/jobs
echo +memory > $CG/cgroup.subtree_control

# run_jobs PHASE: one cgroup per job; healthy jobs delete their file.
run_jobs() {
  i=0
  while [ $i -lt "$JOBS" ]; do
    d=$CG/$1$i
    mkdir $d
    sh -c "echo \$\$ > $d/cgroup.procs && exec dd if=/dev/zero of=/mnt/jobs/$1$i bs=4k count=$((KIB / 4)) status=none"
    [ "$1" = healthy ] && rm /mnt/jobs/$1$i
    rmdir $d
    i=$((i + 1))
    [ $((i % 30)) -eq 0 ] && sleep 1
  done
}

step "healthy capture, record"
memdoctor capture --top 5 -o $OUT/healthy.txtar --note "lab: idle guest (1 GB, 2 vCPUs), cgroup v2 only" 2> $OUT/capture.err
memdoctor record --db /tmp/md.db --interval 1s --listen '' 2> $OUT/record.err &
rec=$!
sleep 2
step "healthy jobs"
run_jobs healthy
sleep 1
cat /sys/fs/cgroup/cgroup.stat > $OUT/stat.healthy
memdoctor check --json > $OUT/healthy.json 2> $OUT/healthy.err
step "leaky jobs"
run_jobs leaky
step "stop recording"
sleep 2
kill -TERM $rec
wait $rec
step "check, capture, diagnose"
cat /sys/fs/cgroup/cgroup.stat > $OUT/stat.before
memdoctor check --json > $OUT/dying.json 2> $OUT/dying.err
memdoctor capture --top 5 -o $OUT/dying-cgroups.txtar --note "lab: $JOBS memory cgroups below /jobs removed while each still had $KIB KiB of page cache charged" 2>> $OUT/capture.err
memdoctor diagnose --from /tmp/md.db --json > $OUT/diagnose.json 2> $OUT/diagnose.err
step "dying charge"
# A live child with 4 MiB of page cache of its own: /jobs' usage less its
# live children's is what its dying descendants hold.
mkdir $CG/live
sh -c "echo \$\$ > $CG/live/cgroup.procs && exec dd if=/dev/zero of=/mnt/jobs/live bs=4k count=1024 status=none"
sync
cat $CG/memory.current > $OUT/jobs.current
cat $CG/live/memory.current > $OUT/live.current
memdoctor check --json --cgroup /jobs > $OUT/focus.json 2> $OUT/focus.err
memdoctor check --cgroup /jobs > $OUT/focus.txt 2>> $OUT/focus.err
step "reclaim"
# Dirty cache pins its cgroup until written back (reclaim reports it and
# does not ask for it): write it back first, as the remedy says.
sync
memdoctor reclaim --json > $OUT/reclaim-dry.json 2> $OUT/reclaim.err
cat /sys/fs/cgroup/cgroup.stat > $OUT/stat.dry
memdoctor reclaim --apply --json > $OUT/reclaim.json 2>> $OUT/reclaim.err
cat /sys/fs/cgroup/cgroup.stat > $OUT/stat.after
memdoctor check --json > $OUT/after.json 2> $OUT/after.err
step done
