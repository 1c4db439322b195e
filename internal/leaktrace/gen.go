package leaktrace

// The BPF objects and their Go bindings are generated and committed, so a
// plain go build needs no clang. The programs read the registers of the
// user ABI, so there is one object per architecture. Regenerate (clang,
// libbpf headers) with:
//
//	go generate ./internal/leaktrace/
//
// log2frac.inc is log2(1 + (i + 0.5) / 256) * 65536 rounded, for i in 0..255.

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -target amd64,arm64 -cc clang -cflags "-O2 -g -Wall -Werror" -type sample leaktrace leaktrace.c
