package runtimes

import (
	"os"
	"testing"
)

// BenchmarkParseHsperf is the cost of one read of a JVM's perf data (check
// polls each JVM every 5 ms during --gc-interval).
func BenchmarkParseHsperf(b *testing.B) {
	data, err := os.ReadFile("testdata/hsperfdata-g1-jdk17")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseHsperf(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNormalizeGoPage parses and normalises a real client_golang page.
func BenchmarkNormalizeGoPage(b *testing.B) {
	data, err := os.ReadFile("testdata/pages/go-client_golang-1.25.prom")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		fams, err := ParsePage(data)
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := Normalize(fams, "u"); !ok {
			b.Fatal("not recognised")
		}
	}
}

// BenchmarkRuntimeSeries parses a node_exporter page the way discovery
// does: the runtime's series only.
func BenchmarkRuntimeSeries(b *testing.B) {
	data, err := os.ReadFile("testdata/pages/go-client_golang-1.25.prom")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		fams, err := ParsePage(runtimeSeries(data))
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := Normalize(fams, "u"); !ok {
			b.Fatal("not recognised")
		}
	}
}
