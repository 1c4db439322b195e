#!/bin/bash
# noisy-neighbour.sh: a host that is not quiet, for running the tests
# against. It does to the memory cgroup hierarchy what a busy CI host or
# kubelet does, under a parent cgroup of its own:
#
#   - creates and removes memory cgroups at RATE a second (default 36),
#     each charged with KIB KiB of page cache by a job that ran in it, so
#     that about DYING of them (default 360) stay dying at any time: a job's
#     file is overwritten DYING jobs later, which frees the cgroup it pinned;
#   - the process that does so and its parent cgroup are both named
#     ESC "[31mkube;$(id)" (escape byte included: a hostile name, as the
#     cgroup tracer and every report must print it);
#   - loads the CPUs (stress-ng --cpu N when installed, else N busy shells);
#   - with VM=N (stress-ng), runs N processes of VM_MIB MiB (default 700)
#     each, larger than a test's own: a check's top-N list or --malloc's
#     "largest processes" are then not the test's.
#
# usage: scripts/noisy-neighbour.sh [SECONDS]   (root; default 600 s, 0: until
# interrupted). Environment: RATE, DYING, KIB, CPUS (default 2), VM (0),
# VM_MIB.
#
# It is not run by make test: start it in another terminal, run the tests
# you want to check with -run, stop it with Ctrl-C. Whatever way it ends it
# removes its processes, its files and every cgroup it made (its dying
# cgroups are freed by deleting the files that pin them).
set -u

secs=${1:-600}
rate=${RATE:-36}
dying=${DYING:-360}
kib=${KIB:-64}
cpus=${CPUS:-2}
vm=${VM:-0}
vmmib=${VM_MIB:-700}
name=$'\e[31mkube;$(id)'

if [ "$(id -u)" != 0 ]; then
	echo "noisy-neighbour: run as root (it makes memory cgroups)" >&2
	exit 2
fi
case "$secs$rate$dying$kib$cpus$vm$vmmib" in
*[!0-9]*)
	echo "noisy-neighbour: SECONDS, RATE, DYING, KIB, CPUS, VM and VM_MIB are whole numbers" >&2
	exit 2
	;;
esac
if ! command -v gcc >/dev/null; then
	echo "noisy-neighbour: needs gcc (apt-get install gcc)" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")/.." && pwd)

# The memory hierarchy: cgroup v1's memory mount, else cgroup2 with the
# memory controller enabled below its root.
root=$(awk '$0 ~ / - cgroup / && $NF ~ /(^|,)memory(,|$)/ {print $5; exit}' /proc/self/mountinfo)
v2=0
if [ -z "$root" ]; then
	root=$(awk '$0 ~ / - cgroup2 / {print $5; exit}' /proc/self/mountinfo)
	v2=1
fi
if [ -z "$root" ]; then
	echo "noisy-neighbour: no memory cgroup hierarchy is mounted" >&2
	exit 2
fi
if [ "$v2" = 1 ] && ! grep -qw memory "$root/cgroup.subtree_control"; then
	echo "noisy-neighbour: the memory controller is not enabled in $root/cgroup.subtree_control" >&2
	exit 2
fi

tmp=$(mktemp -d /var/tmp/noisy-neighbour.XXXXXX) || exit 1
parent="$root/$name"
pids=()

cleanup() {
	trap - EXIT INT TERM HUP
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null
	done
	# The files pin the dying cgroups: deleting them frees those.
	rm -rf "$tmp"
	if [ -d "$parent" ]; then
		# A job stopped mid-way leaves its live cgroup (and maybe a process).
		for cg in "$parent"/*/; do
			[ -d "$cg" ] || continue
			while read -r p; do kill -9 "$p" 2>/dev/null; done <"$cg/cgroup.procs"
			for _ in $(seq 100); do rmdir "$cg" 2>/dev/null && break; sleep 0.05; done
		done
		[ "$v2" = 1 ] || echo 0 >"$parent/memory.force_empty" 2>/dev/null
		for _ in $(seq 100); do rmdir "$parent" 2>/dev/null && break; sleep 0.05; done
		if [ -d "$parent" ]; then
			echo "noisy-neighbour: could not remove $(printf %q "$parent")" >&2
		fi
	fi
	echo "noisy-neighbour: stopped, cleaned up" >&2
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

mkdir "$parent" || exit 1
mkdir "$tmp/data" || exit 1
# The job runner, under the hostile name: the kernel takes the process name
# (comm, 15 bytes: all of it) from the file's name.
if ! gcc -O2 -o "$tmp/$name" "$here/testdata/programs/jobrunner.c"; then
	exit 1
fi

if command -v stress-ng >/dev/null; then
	stress-ng --cpu "$cpus" --quiet &
	pids+=($!)
else
	for _ in $(seq "$cpus"); do
		sh -c 'while :; do :; done' &
		pids+=($!)
	done
fi

if [ "$vm" -gt 0 ]; then
	if ! command -v stress-ng >/dev/null; then
		echo "noisy-neighbour: VM needs stress-ng (apt-get install stress-ng)" >&2
		exit 2
	fi
	stress-ng --vm "$vm" --vm-bytes "${vmmib}M" --vm-keep --quiet &
	pids+=($!)
fi

# DYING jobs a run, runs back to back: the names repeat from one run to the
# next, so job i's file (and the cgroup it pinned) goes when the next run
# overwrites it.
(
	trap 'kill $job 2>/dev/null; wait $job; exit 0' TERM
	while :; do
		"$tmp/$name" "$parent" "$tmp/data" "$rate" "$dying" "$kib" >/dev/null &
		job=$!
		wait $job || exit 1
	done
) &
pids+=($!)

echo "noisy-neighbour: pid $$, $rate memory cgroups a second under $(printf %q "$parent"), ~$dying dying, $cpus CPUs busy, $vm processes of $vmmib MiB" >&2
if [ "$secs" = 0 ]; then
	wait "${pids[-1]}"
else
	sleep "$secs" &
	pids+=($!)
	wait $!
fi
