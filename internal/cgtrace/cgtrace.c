//go:build ignore

// Kernel side of memdoctor's cgroup tracer: one record per cgroup mkdir and
// rmdir (tracepoints cgroup:cgroup_mkdir / cgroup:cgroup_rmdir, BTF-typed),
// with the calling process. CO-RE: the structs below name only the fields
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

struct task_struct {
	struct task_struct *real_parent;
	int tgid;
} __attribute__((preserve_access_index));

enum op { OP_MKDIR = 1, OP_RMDIR = 2 };

struct event {
	__u64 ts;
	__u64 cgroup_id;
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

// Records the ring buffer had no room for.
__u64 dropped = 0;

// Wake the reader only when a quarter of the ring is full: it polls on its
// own timer, so most records cost no wakeup.
#define WAKE_AT ((1 << 20) / 4)

static __always_inline int record(__u32 op, struct cgroup *cgrp, const char *path)
{
	struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&dropped, 1);
		return 0;
	}
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	e->ts = bpf_ktime_get_ns();
	e->op = op;
	e->pid = pid_tgid >> 32;
	e->ppid = BPF_CORE_READ(task, real_parent, tgid);
	e->cgroup_id = BPF_CORE_READ(cgrp, kn, id);
	e->hierarchy = BPF_CORE_READ(cgrp, root, hierarchy_id);
	e->level = BPF_CORE_READ(cgrp, level);
	bpf_get_current_comm(&e->comm, sizeof(e->comm));
	bpf_probe_read_kernel_str(&e->path, sizeof(e->path), path);
	__u64 flags = RB_NO_WAKEUP;
	if (bpf_ringbuf_query(&events, RB_AVAIL_DATA) >= WAKE_AT)
		flags = RB_FORCE_WAKEUP;
	bpf_ringbuf_submit(e, flags);
	return 0;
}

// tp_btf: the arguments are TP_PROTO(struct cgroup *cgrp, const char *path).
SEC("tp_btf/cgroup_mkdir")
int cgroup_mkdir(__u64 *ctx)
{
	return record(OP_MKDIR, (struct cgroup *)ctx[0], (const char *)ctx[1]);
}

SEC("tp_btf/cgroup_rmdir")
int cgroup_rmdir(__u64 *ctx)
{
	return record(OP_RMDIR, (struct cgroup *)ctx[0], (const char *)ctx[1]);
}
