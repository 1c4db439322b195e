# The distance to the OOM kill, checked against the kill: cgroup /anon has
# memory.max 64M and creep holding 24 MiB of anon; memdoctor check gives
# its distance; creep then adds one MiB at a time, writing
# each, until the OOM killer kills it. Cgroup /cache, at the same limit,
# reads a 96 MiB file through the page cache and is not killed.
set -u
step() { read -r up _ < /proc/uptime; echo "step $up: $*" >&2; }
for cg in anon cache; do
	mkdir /sys/fs/cgroup/$cg
	echo 64M > /sys/fs/cgroup/$cg/memory.max
done
step "file"
dd if=/dev/zero of=/mnt/big bs=1M count=96 2> /dev/null
sync
echo 3 > /proc/sys/vm/drop_caches
step "cache"
sh -c "echo \$\$ > /sys/fs/cgroup/cache/cgroup.procs && exec cat /mnt/big" > /dev/null
echo "cat exit $?" > $OUT/cache.exit
step "anon"
sh -c "echo \$\$ > /sys/fs/cgroup/anon/cgroup.procs && exec creep 24" > $OUT/creep.out 2>&1 &
creep=$!
i=0
until grep -q ready $OUT/creep.out 2> /dev/null; do
	i=$((i + 1))
	[ $i -gt 100 ] && { echo "creep not ready" >&2; exit 1; }
	sleep 0.1
done
memdoctor check --json > $OUT/check.json 2> $OUT/check.err
step "grow"
kill -USR1 $creep
wait $creep
echo "creep exit $?" > $OUT/creep.exit
cat /sys/fs/cgroup/anon/memory.events > $OUT/anon.events
cat /sys/fs/cgroup/cache/memory.events > $OUT/cache.events
step done
read -r up _ < /proc/uptime
echo "$up" > $OUT/uptime.end
