package cgtrace

// The BPF object and its Go bindings are generated and committed, so a plain
// go build needs no clang. Regenerate (clang, libbpf headers) with:
//
//	go generate ./internal/cgtrace/

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -target bpfel,bpfeb -cc clang -cflags "-O2 -g -Wall -Werror" -type event cgtrace cgtrace.c
