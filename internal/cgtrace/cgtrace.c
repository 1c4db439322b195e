//go:build ignore

// Kernel side of memdoctor's cgroup tracer. Cgroup mkdir and rmdir
// (tracepoints cgroup:cgroup_mkdir / cgroup:cgroup_rmdir, BTF-typed) are
// counted here, per creator (the calling process' name and memory cgroup
// at that time): a creator's first operation is one record in the ring
// buffer, naming it (pid, parent, path); the others only add to its
// counts, which the reader takes at each summary. The removed memory
// cgroups not yet released (cgroup:cgroup_release) are kept in a table with
// when each was removed and its name. One record per direct or
// memcg-limit reclaim a task sat through (vmscan:mm_vmscan_{direct,memcg}_
// reclaim_begin/_end), with how long it took, and a count of kswapd wake-ups
// per node. CO-RE: the structs below name only the fields read, and
// libbpf-style relocations fit them to the running kernel's BTF.

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
#define NAME_LEN 40

char __license[] SEC("license") = "GPL";

struct kernfs_node {
	__u64 id;
	const char *name;
} __attribute__((preserve_access_index));

struct cgroup_root {
	int hierarchy_id;
} __attribute__((preserve_access_index));

struct cgroup;

struct cgroup_subsys_state {
	struct cgroup *cgroup;
	struct cgroup_subsys_state *parent;
} __attribute__((preserve_access_index));

struct cgroup {
	struct cgroup_subsys_state self;
	struct kernfs_node *kn;
	struct cgroup_root *root;
	int level;
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
	__u32 counted;      // 1: the operation is counted in creators, the record only names its creator
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
// charged to it), and when each was removed: a table of DYING_SLOTS slots,
// the slot of a cgroup its kernfs id modulo DYING_SLOTS. An array, not a
// hash map: finding the slot is arithmetic the verifier inlines, no helper
// call and no lock, so the removal and the release each cost about one
// cache line. kernfs ids are handed out in sequence, so two cgroups share a
// slot only when DYING_SLOTS ids or more apart (a prime: any stride of ids
// visits every slot before one comes back). A slot taken is kept by the
// older cgroup; the newer is not followed (counted in dying_untracked), so
// the oldest stay known.
struct removed {
	__u64 id;        // 0: free
	__u64 ts;        // 0: being written
	__u64 parent_id; // the parent cgroup's kernfs id
	__u8 name[NAME_LEN];
};

#define DYING_SLOTS 16381

struct {
	__uint(type, 2); // BPF_MAP_TYPE_ARRAY
	__uint(max_entries, DYING_SLOTS);
	__uint(map_flags, 1 << 10); // BPF_F_MMAPABLE: the reader reads it in place
	__type(key, __u32);
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

// The hierarchy whose operations are counted per creator (-1: all), set
// before loading.
const volatile __s32 want_hierarchy = -1;

// Cgroup operations seen, of all hierarchies and of the wanted one.
__u64 events_all = 0;
__u64 events_kept = 0;

// A creator: the calling process' name and memory cgroup.
struct creator_key {
	__u64 memcg_id;
	__u8 comm[COMM_LEN];
};

struct counts {
	__u64 mkdir;
	__u64 rmdir;
};

// When it is full, the operations of creators not in it are one record
// each (counted = 0), as when nothing is counted here.
#define MAX_CREATORS 4096

struct {
	__uint(type, 1); // BPF_MAP_TYPE_HASH
	__uint(max_entries, MAX_CREATORS);
	__type(key, struct creator_key);
	__type(value, struct counts);
} creators SEC(".maps");

static __always_inline void count(struct counts *c, __u32 op)
{
	if (op == OP_MKDIR)
		__sync_fetch_and_add(&c->mkdir, 1);
	else
		__sync_fetch_and_add(&c->rmdir, 1);
}

static __always_inline void submit(struct event *e)
{
	__u64 flags = RB_NO_WAKEUP;
	if (bpf_ringbuf_query(&events, RB_AVAIL_DATA) >= wake_at)
		flags = RB_FORCE_WAKEUP;
	bpf_ringbuf_submit(e, flags);
}

static __always_inline int record(__u32 op, struct cgroup *cgrp, const char *path, __u64 id, __s32 hier, __u64 ts)
{
	__sync_fetch_and_add(&events_all, 1);
	if (want_hierarchy >= 0 && hier != want_hierarchy)
		return 0;
	__sync_fetch_and_add(&events_kept, 1);
	// The creator's operations after its first are a count: no record.
	struct creator_key k = {.memcg_id = memcg_of()};
	bpf_get_current_comm(&k.comm, sizeof(k.comm));
	struct counts *c = bpf_map_lookup_elem(&creators, &k);
	if (c) {
		count(c, op);
		return 0;
	}
	struct counts first = {.mkdir = op == OP_MKDIR, .rmdir = op == OP_RMDIR};
	__u32 counted = 1;
	if (bpf_map_update_elem(&creators, &k, &first, 1 /* BPF_NOEXIST */)) {
		// Another CPU added it first, or the table is full.
		c = bpf_map_lookup_elem(&creators, &k);
		if (c) {
			count(c, op);
			return 0;
		}
		counted = 0;
	}
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
	e->counted = counted;
	e->pid = pid_tgid >> 32;
	e->ppid = task->real_parent->tgid;
	e->cgroup_id = id;
	e->hierarchy = hier;
	e->level = cgrp->level;
	e->duration_ns = 0;
	e->reclaimed = 0;
	e->memcg_id = k.memcg_id;
	__builtin_memcpy(e->comm, k.comm, COMM_LEN);
	bpf_probe_read_kernel_str(&e->path, sizeof(e->path), path);
	submit(e);
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
	if (follow_hierarchy >= 0 && hier == follow_hierarchy && id) {
		__u32 slot = id % DYING_SLOTS;
		struct removed *r = bpf_map_lookup_elem(&dying, &slot);
		if (r && __sync_val_compare_and_swap(&r->id, 0, id) == 0) {
			r->ts = now;
			struct cgroup_subsys_state *parent = cgrp->self.parent;
			r->parent_id = parent ? parent->cgroup->kn->id : 0;
			bpf_probe_read_kernel_str(&r->name, sizeof(r->name), cgrp->kn->name);
		} else {
			__sync_fetch_and_add(&dying_untracked, 1);
		}
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
	__u32 slot = id % DYING_SLOTS;
	struct removed *r = bpf_map_lookup_elem(&dying, &slot);
	if (r && r->id == id) {
		// The time first: a removal that takes the slot next writes
		// its own after claiming it.
		r->ts = 0;
		__sync_val_compare_and_swap(&r->id, id, 0);
	}
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
	e->counted = 0;
	bpf_get_current_comm(&e->comm, sizeof(e->comm));
	submit(e);
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
