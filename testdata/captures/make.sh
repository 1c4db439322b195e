#!/bin/sh
# Re-creates the real captures in this directory on a test machine (root).
# Each capture is memdoctor's own `capture` output, never edited; what was
# running when it was taken is written into its provenance note.
#   healthy          an idle host
#   malloc-arenas    testdata/programs/arenas.c: 32 threads, arena_max 64, 16 MiB each
#   dying-cgroups    300 memory cgroups removed while their page cache lived
#   low-available    stress-ng holding all but ~1 GiB of memory
set -eu
cd "$(dirname "$0")"
md=${MEMDOCTOR:-memdoctor}
k=$(uname -r | cut -d- -f1 | cut -d. -f1,2)
mode=hybrid; [ -e /sys/fs/cgroup/cgroup.controllers ] && mode=v2
tag="$k-$(uname -m)-$mode"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$md" capture --top 5 -o "healthy-$tag.txtar" --note "idle host"

cc -O1 -o "$work/arenas" ../programs/arenas.c -lpthread
GLIBC_TUNABLES=glibc.malloc.arena_max=64 "$work/arenas" 32 16 > "$work/arenas.out" &
apid=$!
sleep 2
"$md" capture --top 5 -o "malloc-arenas-$tag.txtar" --note "arenas.c: 32 threads, glibc.malloc.arena_max=64, 16 MiB each, 63/64 freed"
kill $apid

root=/sys/fs/cgroup/memory
[ -d $root ] || root=/sys/fs/cgroup
i=0
while [ $i -lt 300 ]; do
  d=$root/memdoctor_capture_$i
  mkdir $d
  sh -c "echo \$\$ > $d/cgroup.procs && exec dd if=/dev/zero of=$work/f$i bs=64k count=4 status=none"
  i=$((i + 1))
done
sleep 1
i=0
while [ $i -lt 300 ]; do rmdir $root/memdoctor_capture_$i; i=$((i + 1)); done
"$md" capture --top 5 -o "dying-cgroups-$tag.txtar" --note "300 memory cgroups removed while each still had 256 KiB of page cache charged"
rm -f "$work"/f*

avail=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
stress-ng --vm 1 --vm-bytes $(( (avail - 1200000) ))k --vm-keep --vm-populate -t 300s >/dev/null 2>&1 &
spid=$!
# Populating 20+ GB takes a while on a host that initialises memory lazily:
# wait until less than 10 % is available (at most 3 minutes).
total=$(awk '/MemTotal/ {print $2}' /proc/meminfo)
for _ in $(seq 180); do
  sleep 1
  a=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
  [ $((a * 10)) -lt "$total" ] && break
done
sleep 2
"$md" capture --top 5 -o "low-available-$tag.txtar" --note "stress-ng --vm 1 holding all but ~1.2 GB of MemAvailable"
kill $spid; wait $spid 2>/dev/null || true
