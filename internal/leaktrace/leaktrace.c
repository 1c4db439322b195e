//go:build ignore

// Kernel side of `memdoctor leaks --ebpf`: uprobes on one process' libc
// allocation functions sample about one allocation per RATE bytes
// allocated (a Poisson process over bytes, as the preload library and Go's
// runtime do), keep the sampled block's user stack (bpf_get_stackid) and
// size in a bounded hash map by address, and forget the block when it is
// freed. free() of a block that was not sampled costs one map delete that
// finds nothing.
//
// Entry probes decide; return probes learn the address. For malloc and
// calloc only a sampled call leaves a note for its return probe. realloc
// and the aligned functions may call malloc inside libc (realloc(NULL, n),
// small alignments), so they always leave a note, and malloc's entry probe
// skips a call made while its thread has one: each allocation is counted
// once.

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

char __license[] SEC("license") = "GPL";

// The registers a uprobe sees, in the user ABI's layout.
#if defined(__TARGET_ARCH_x86)
struct regs {
	__u64 r15, r14, r13, r12, rbp, rbx, r11, r10, r9, r8;
	__u64 rax, rcx, rdx, rsi, rdi, orig_rax, rip, cs, eflags, rsp, ss;
};
#define ARG1(r) ((r)->rdi)
#define ARG2(r) ((r)->rsi)
#define ARG3(r) ((r)->rdx)
#define RET(r) ((r)->rax)
#elif defined(__TARGET_ARCH_arm64)
struct regs {
	__u64 regs[31];
	__u64 sp, pc, pstate;
};
#define ARG1(r) ((r)->regs[0])
#define ARG2(r) ((r)->regs[1])
#define ARG3(r) ((r)->regs[2])
#define RET(r) ((r)->regs[0])
#else
#error "leaktrace: unsupported architecture"
#endif

#define MAP_HASH 1
#define MAP_PERCPU_ARRAY 6
#define MAP_STACK_TRACE 7
#define MAP_RINGBUF 27
#define F_USER_STACK (1ULL << 8)
#define MAX_DEPTH 32

enum kind { K_MALLOC = 1, K_CALLOC, K_REALLOC, K_MEMALIGN, K_POSIX_MEMALIGN, K_ALIGNED_ALLOC, K_FREE, K_CALIBRATE };

// Set by the loader.
const volatile __u32 target_tgid = 0;
const volatile __u64 rate = 512 * 1024;     // mean bytes between samples
const volatile __u64 max_samples = 1000000; // sampled allocations at most

// 0: count calls only (the calibration phase); 1: sample.
__u32 sampling = 0;

// Totals read by the Go side.
__u64 samples = 0;      // allocations sampled
__u64 dropped_live = 0; // sampled, not followed: the live map was full
__u64 dropped_stack = 0; // sampled, stack not kept (the stack map was full or a bucket taken)
__u64 dropped_event = 0; // sampled, no room in the ring buffer
__u64 capped = 0;       // due, not sampled: max_samples reached

struct counters {
	__u64 calls[16]; // by kind: the probes' hits
	__s64 left;     // bytes to allocate before the next sample
	__u64 armed;
};

struct {
	__uint(type, MAP_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct counters);
} percpu SEC(".maps");

// A call in flight on a thread (key: pid_tgid).
struct note {
	__u64 size;
	__u64 memptr; // posix_memalign's void **
	__u32 kind;
	__u32 sampled;
};

struct {
	__uint(type, MAP_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct note);
} notes SEC(".maps");

// A sampled block not freed yet (key: its address).
struct block {
	__u64 size;
	__s64 stack; // stack id, or < 0: not kept
};

struct {
	__uint(type, MAP_HASH);
	__uint(max_entries, 65536); // the loader sets MaxLive
	__type(key, __u64);
	__type(value, struct block);
} live SEC(".maps");

struct {
	__uint(type, MAP_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, MAX_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

// One record per sampled allocation, for the bytes allocated per stack.
struct sample {
	__u64 size;
	__s64 stack;
};

// Unused variable so bpf2go emits the Go type of struct sample.
const struct sample *unused_sample __attribute__((unused));

struct {
	__uint(type, MAP_RINGBUF);
	__uint(max_entries, 1 << 20);
} events SEC(".maps");

// log2(1 + (i + 0.5) / 256) in 1/65536ths: the fraction of a base-2
// logarithm from the 8 bits after the leading one.
const __u32 log2frac[256] = {
#include "log2frac.inc"
};

// gap draws an exponentially distributed number of bytes with mean rate:
// -ln(u) * rate for u uniform in (0, 1], with -ln(u) = ln 2 * (32 - log2(x))
// for x = u * 2^32, log2(x) from the position of x's leading one and a
// table of the fraction (within 0.3%).
static __always_inline __s64 gap(void)
{
	__u64 x = (__u64)bpf_get_prandom_u32() + 1; // 1 .. 2^32
	__u32 k = 0;
	__u64 y = x;
	if (y >> 16) { y >>= 16; k += 16; }
	if (y >> 8) { y >>= 8; k += 8; }
	if (y >> 4) { y >>= 4; k += 4; }
	if (y >> 2) { y >>= 2; k += 2; }
	if (y >> 1) { y >>= 1; k += 1; }
	if (x >> 32) { k = 32; }
	__u32 idx;
	if (k >= 8)
		idx = (x >> (k - 8)) & 0xff;
	else
		idx = (x << (8 - k)) & 0xff;
	__u64 l = ((__u64)(32 - k) << 16);
	__u64 f = log2frac[idx & 0xff];
	l = l > f ? l - f : 0; // -log2(u) in 1/65536ths
	// ln 2 = 45426 / 65536
	return (__s64)((((rate * l) >> 16) * 45426) >> 16);
}

// due counts a call of kind of n bytes on this CPU; true when they cross
// the next sample.
static __always_inline int due(__u32 kind, __u64 n)
{
	__u32 zero = 0;
	struct counters *c = bpf_map_lookup_elem(&percpu, &zero);
	if (!c)
		return 0;
	c->calls[kind & 15]++;
	if (!sampling)
		return 0;
	if (!c->armed) {
		c->armed = 1;
		c->left = gap();
	}
	c->left -= (__s64)n;
	if (c->left >= 0)
		return 0;
	c->left = gap();
	if (samples >= max_samples) {
		__sync_fetch_and_add(&capped, 1);
		return 0;
	}
	return 1;
}

static __always_inline int ours(void)
{
	return (bpf_get_current_pid_tgid() >> 32) == target_tgid;
}

// enter handles the entry of an allocation call of n bytes.
static __always_inline int enter(__u32 kind, __u64 n, __u64 memptr, int always_note)
{
	if (!ours())
		return 0;
	if (!sampling)
		return due(kind, n); // counts the call
	__u64 id = bpf_get_current_pid_tgid();
	if (kind == K_MALLOC && bpf_map_lookup_elem(&notes, &id))
		return 0; // inside realloc or an aligned function: counted there
	int d = due(kind, n);
	if (!d && !always_note)
		return 0;
	struct note nt = {.size = n, .memptr = memptr, .kind = kind, .sampled = d};
	bpf_map_update_elem(&notes, &id, &nt, 0);
	return 0;
}

// leave handles the return of an allocation call that left a note.
static __always_inline int leave(struct regs *ctx, __u32 kind)
{
	if (!ours())
		return 0;
	__u64 id = bpf_get_current_pid_tgid();
	struct note *np = bpf_map_lookup_elem(&notes, &id);
	if (!np || np->kind != kind)
		return 0; // not noted, or malloc returning inside realloc
	struct note nt = *np;
	bpf_map_delete_elem(&notes, &id);
	if (!nt.sampled)
		return 0;
	__u64 addr = RET(ctx);
	if (kind == K_POSIX_MEMALIGN) {
		if (addr != 0)
			return 0; // failed: returns an error number
		if (bpf_probe_read_user(&addr, sizeof(addr), (void *)nt.memptr) < 0)
			return 0;
	}
	if (!addr)
		return 0;
	__sync_fetch_and_add(&samples, 1);
	struct block b = {.size = nt.size};
	b.stack = bpf_get_stackid(ctx, &stacks, F_USER_STACK);
	if (b.stack < 0)
		__sync_fetch_and_add(&dropped_stack, 1);
	if (bpf_map_update_elem(&live, &addr, &b, 0) < 0)
		__sync_fetch_and_add(&dropped_live, 1);
	struct sample *s = bpf_ringbuf_reserve(&events, sizeof(*s), 0);
	if (!s) {
		__sync_fetch_and_add(&dropped_event, 1);
		return 0;
	}
	s->size = nt.size;
	s->stack = b.stack;
	bpf_ringbuf_submit(s, 0);
	return 0;
}

// forget drops p from the live blocks (free, and realloc's old block).
static __always_inline void forget(__u64 p)
{
	if (p)
		bpf_map_delete_elem(&live, &p);
}

SEC("uprobe")
int malloc_enter(struct regs *ctx) { return enter(K_MALLOC, ARG1(ctx), 0, 0); }
SEC("uretprobe")
int malloc_leave(struct regs *ctx) { return leave(ctx, K_MALLOC); }

SEC("uprobe")
int calloc_enter(struct regs *ctx) { return enter(K_CALLOC, ARG1(ctx) * ARG2(ctx), 0, 0); }
SEC("uretprobe")
int calloc_leave(struct regs *ctx) { return leave(ctx, K_CALLOC); }

SEC("uprobe")
int realloc_enter(struct regs *ctx)
{
	if (!ours())
		return 0;
	if (sampling)
		forget(ARG1(ctx));
	return enter(K_REALLOC, ARG2(ctx), 0, 1);
}
SEC("uretprobe")
int realloc_leave(struct regs *ctx) { return leave(ctx, K_REALLOC); }

SEC("uprobe")
int memalign_enter(struct regs *ctx) { return enter(K_MEMALIGN, ARG2(ctx), 0, 1); }
SEC("uretprobe")
int memalign_leave(struct regs *ctx) { return leave(ctx, K_MEMALIGN); }

SEC("uprobe")
int aligned_alloc_enter(struct regs *ctx) { return enter(K_ALIGNED_ALLOC, ARG2(ctx), 0, 1); }
SEC("uretprobe")
int aligned_alloc_leave(struct regs *ctx) { return leave(ctx, K_ALIGNED_ALLOC); }

SEC("uprobe")
int posix_memalign_enter(struct regs *ctx) { return enter(K_POSIX_MEMALIGN, ARG3(ctx), ARG1(ctx), 1); }
SEC("uretprobe")
int posix_memalign_leave(struct regs *ctx) { return leave(ctx, K_POSIX_MEMALIGN); }

SEC("uprobe")
int free_enter(struct regs *ctx)
{
	if (!ours())
		return 0;
	__u32 zero = 0;
	struct counters *c = bpf_map_lookup_elem(&percpu, &zero);
	if (c)
		c->calls[K_FREE]++;
	if (sampling)
		forget(ARG1(ctx));
	return 0;
}

// calibrate is attached to a function of memdoctor itself to time one
// probe hit on this host: the work of malloc_enter on a call not sampled.
SEC("uprobe")
int calibrate(struct regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	if (bpf_map_lookup_elem(&notes, &id))
		return 0;
	__u32 zero = 0;
	struct counters *c = bpf_map_lookup_elem(&percpu, &zero);
	if (c)
		c->calls[K_CALIBRATE]++;
	return 0;
}
