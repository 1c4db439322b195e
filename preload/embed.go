// Package preload carries the C sources of libmemdoctor_preload.so, the
// LD_PRELOAD library that trims glibc malloc's free memory from inside a
// running program (see README.md), builds them with the system C compiler,
// and speaks the library's side of the malloc_info request protocol.
//
// The C files live in src/ because a Go package directory may not hold .c
// files without cgo; memdoctor uses no cgo.
package preload

import "embed"

// sources are the files `make -C preload` builds the library from.
//
//go:embed Makefile src/*.c src/*.h
var sources embed.FS

// LibName is the file name of the built library.
const LibName = "libmemdoctor_preload.so"

// The flags of the Makefile's library target (a test checks they agree).
var (
	// CFLAGS are the compiler flags.
	CFLAGS = []string{"-O2", "-g", "-fPIC", "-Wall", "-Wextra", "-std=gnu11", "-fvisibility=hidden", "-fno-omit-frame-pointer"}
	// LDFLAGS are the linker flags.
	LDFLAGS = []string{"-shared", "-Wl,-z,now", "-Wl,-z,relro"}
	// LDLIBS are the libraries linked.
	LDLIBS = []string{"-lpthread", "-ldl", "-lm"}
)
