//go:build ignore

// Kernel side of memdoctor's cgroup tracer: one record per cgroup mkdir and
// rmdir (tracepoints cgroup:cgroup_mkdir / cgroup:cgroup_rmdir, BTF-typed),
// with the calling process and its memory cgroup at that time; the removed
// memory cgroups not yet released (cgroup:cgroup_release) and when each was
// removed; one record per direct or memcg-limit reclaim a
// task sat through (vmscan:mm_vmscan_{direct,memcg}_reclaim_begin/_end),
// with how long it took; and a count of kswapd wake-ups per node. CO-RE: the structs below name only the fields
// read, and libbpf-style relocations fit them to the running kernel's BTF.

typedef unsigned char __u8;
typedef unsigned int __u32;
typedef int __s32;
typedef unsigned long long __u64;
typedef long long __s64;
typedef __u64 __be64;
typedef __u32 __be32;
typedef unsigned short __u16;
typedef __u16 __be16;
typedef __u32 __wsum;

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#define MAP_TYPE_RINGBUF 27
#define RB_NO_WAKEUP 1
#define RB_FORCE_WAKEUP 2
#define RB_AVAIL_DATA 0

#define COMM_LEN 16
#define PATH_LEN 160

char __license[] SEC("license") = "GPL";

struct kernfs_node {
	__u64 id;
} __attribute__((preserve_access_index));

struct cgroup_root {
	int hierarchy_id;
} __attribute__((preserve_access_index));

struct cgroup {
	struct kernfs_node *kn;
	struct cgroup_root *root;
	int level;
} __attribute__((preserve_access_index));

struct cgroup_subsys_state {
	struct cgroup *cgroup;
} __attribute__((preserve_access_index));

// The kernel sizes subsys[] by its configured controllers; the memory
// controller's index comes from the running kernel's enum (CO-RE).
struct css_set {
	struct cgroup_subsys_state *subsys[16];
} __attribute__((preserve_access_index));

enum cgroup_subsys_id { memory_cgrp_id = 4 };

struct task_struct {
	struct task_struct *real_parent;
	int tgid;
	struct css_set *cgroups;
} __attribute__((preserve_access_index));

enum op { OP_MKDIR = 1, OP_RMDIR = 2, OP_DIRECT_RECLAIM = 3, OP_MEMCG_RECLAIM = 4 };

struct event {
	__u64 ts;
	__u64 cgroup_id;
	__u64 duration_ns;  // reclaim: time in reclaim
	__u64 reclaimed;    // reclaim: pages reclaimed
	__u64 memcg_id;     // the calling task's memory cgroup (kernfs id), 0: unknown
	__u32 op;
	__u32 pid;
	__u32 ppid;
	__s32 hierarchy;
	__s32 level;
	__u8 comm[COMM_LEN];
	__u8 path[PATH_LEN];
};

// Unused variable so bpf2go emits the Go type of struct event.
const struct event *unused_event __attribute__((unused));

struct {
	__uint(type, MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} events SEC(".maps");

// Cgroups of the followed hierarchy removed during the trace and not yet
// released (a removed memory cgroup stays allocated, dying, while pages are
// charged to it): when each was removed. When it is full the newest are not
// followed (counted in dying_untracked), so the oldest stay known.
struct removed {
	__u64 ts;
	__s32 hierarchy;
	__s32 pad;
};

#define MAX_DYING 16384

struct {
	__uint(type, 1); // BPF_MAP_TYPE_HASH
	__uint(max_entries, MAX_DYING);
	__type(key, __u64);
	__type(value, struct removed);
} dying SEC(".maps");

// The hierarchy whose removed cgroups are followed (the memory
// controller's; -1: none), set before loading.
const volatile __s32 follow_hierarchy = -1;

// Removed cgroups the dying map had no room for.
__u64 dying_untracked = 0;

// memcg_of is the kernfs id of the current task's memory cgroup, read at
// event time (so a process gone before the reader drains keeps it).
static __always_inline __u64 memcg_of(void)
{
	if (!bpf_core_enum_value_exists(enum cgroup_subsys_id, memory_cgrp_id))
		return 0;
	int idx = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);
	if (idx < 0 || idx >= 16)
		return 0;
	// BTF-typed pointers: plain loads, no helper calls.
	struct task_struct *task = bpf_get_current_task_btf();
	struct css_set *cset = task->cgroups;
	if (!cset)
		return 0;
	struct cgroup_subsys_state *css = cset->subsys[idx];
	if (!css)
		return 0;
	struct cgroup *cg = css->cgroup;
	if (!cg)
		return 0;
	struct kernfs_node *kn = cg->kn;
	if (!kn)
		return 0;
	return kn->id;
}

// Records the ring buffer had no room for.
__u64 dropped = 0;

// Wake the reader only when this many bytes wait in the ring (set before
// loading, from the ring's size): it drains on its own timer, so most
// records cost no wakeup.
const volatile __u64 wake_at = (1 << 20) / 4;

static __always_inline int record(__u32 op, struct cgroup *cgrp, const char *path, __u64 id, __s32 hier, __u64 ts)
{
	struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&dropped, 1);
		return 0;
	}
	// The tracepoint's arguments and the current task are BTF-typed:
	// their fields are plain loads (the kernel guards them), no helper
	// calls.
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	e->ts = ts;
	e->op = op;
	e->pid = pid_tgid >> 32;
	e->ppid = task->real_parent->tgid;
	e->cgroup_id = id;
	e->hierarchy = hier;
	e->level = cgrp->level;
	e->duration_ns = 0;
	e->reclaimed = 0;
	e->memcg_id = memcg_of();
	bpf_get_current_comm(&e->comm, sizeof(e->comm));
	bpf_probe_read_kernel_str(&e->path, sizeof(e->path), path);
	__u64 flags = RB_NO_WAKEUP;
	if (bpf_ringbuf_query(&events, RB_AVAIL_DATA) >= wake_at)
		flags = RB_FORCE_WAKEUP;
	bpf_ringbuf_submit(e, flags);
	return 0;
}

// tp_btf: the arguments are TP_PROTO(struct cgroup *cgrp, const char *path).
SEC("tp_btf/cgroup_mkdir")
int cgroup_mkdir(__u64 *ctx)
{
	struct cgroup *cgrp = (struct cgroup *)ctx[0];
	return record(OP_MKDIR, cgrp, (const char *)ctx[1], cgrp->kn->id, cgrp->root->hierarchy_id, bpf_ktime_get_ns());
}

SEC("tp_btf/cgroup_rmdir")
int cgroup_rmdir(__u64 *ctx)
{
	struct cgroup *cgrp = (struct cgroup *)ctx[0];
	__s32 hier = cgrp->root->hierarchy_id;
	__u64 id = cgrp->kn->id, now = bpf_ktime_get_ns();
	if (follow_hierarchy >= 0 && hier == follow_hierarchy) {
		struct removed r = {.ts = now, .hierarchy = hier};
		if (bpf_map_update_elem(&dying, &id, &r, 0))
			__sync_fetch_and_add(&dying_untracked, 1);
	}
	return record(OP_RMDIR, cgrp, (const char *)ctx[1], id, hier, now);
}

// The cgroup's last reference went: it is freed, no longer dying.
SEC("tp_btf/cgroup_release")
int cgroup_release(__u64 *ctx)
{
	struct cgroup *cgrp = (struct cgroup *)ctx[0];
	if (follow_hierarchy < 0 || cgrp->root->hierarchy_id != follow_hierarchy)
		return 0;
	__u64 id = cgrp->kn->id;
	bpf_map_delete_elem(&dying, &id);
	return 0;
}

// Reclaim: when each task (thread id, kind) entered reclaim.
struct reclaim_key {
	__u32 tid;
	__u32 op;
};

struct {
	__uint(type, 1); // BPF_MAP_TYPE_HASH
	__uint(max_entries, 16384);
	__type(key, struct reclaim_key);
	__type(value, __u64);
} reclaim_start SEC(".maps");

// kswapd wake-ups per NUMA node.
#define MAX_NODES 64
__u64 kswapd_wakes[MAX_NODES] = {};

static __always_inline int reclaim_begin(__u32 op)
{
	struct reclaim_key k = {.tid = (__u32)bpf_get_current_pid_tgid(), .op = op};
	__u64 now = bpf_ktime_get_ns();
	bpf_map_update_elem(&reclaim_start, &k, &now, 0);
	return 0;
}

static __always_inline int reclaim_end(__u32 op, __u64 reclaimed)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct reclaim_key k = {.tid = (__u32)pid_tgid, .op = op};
	__u64 *start = bpf_map_lookup_elem(&reclaim_start, &k);
	if (!start)
		return 0; // began before the trace
	__u64 now = bpf_ktime_get_ns(), began = *start;
	bpf_map_delete_elem(&reclaim_start, &k);
	struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&dropped, 1);
		return 0;
	}
	struct task_struct *task = bpf_get_current_task_btf();
	e->ts = now;
	e->op = op;
	e->duration_ns = now - began;
	e->reclaimed = reclaimed;
	e->pid = pid_tgid >> 32;
	e->ppid = task->real_parent->tgid;
	e->cgroup_id = 0;
	e->memcg_id = memcg_of();
	e->hierarchy = -1;
	e->level = 0;
	e->path[0] = 0;
	bpf_get_current_comm(&e->comm, sizeof(e->comm));
	__u64 flags = RB_NO_WAKEUP;
	if (bpf_ringbuf_query(&events, RB_AVAIL_DATA) >= wake_at)
		flags = RB_FORCE_WAKEUP;
	bpf_ringbuf_submit(e, flags);
	return 0;
}

// (int order, gfp_t gfp_flags)
SEC("tp_btf/mm_vmscan_direct_reclaim_begin")
int direct_reclaim_begin(__u64 *ctx)
{
	return reclaim_begin(OP_DIRECT_RECLAIM);
}

// (unsigned long nr_reclaimed)
SEC("tp_btf/mm_vmscan_direct_reclaim_end")
int direct_reclaim_end(__u64 *ctx)
{
	return reclaim_end(OP_DIRECT_RECLAIM, ctx[0]);
}

SEC("tp_btf/mm_vmscan_memcg_reclaim_begin")
int memcg_reclaim_begin(__u64 *ctx)
{
	return reclaim_begin(OP_MEMCG_RECLAIM);
}

SEC("tp_btf/mm_vmscan_memcg_reclaim_end")
int memcg_reclaim_end(__u64 *ctx)
{
	return reclaim_end(OP_MEMCG_RECLAIM, ctx[0]);
}

// (int nid, int zid, int order)
SEC("tp_btf/mm_vmscan_kswapd_wake")
int kswapd_wake(__u64 *ctx)
{
	__u32 nid = (__u32)ctx[0];
	if (nid < MAX_NODES)
		__sync_fetch_and_add(&kswapd_wakes[nid], 1);
	return 0;
}
