package collect_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/memdoctor/memdoctor/internal/capture"
	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/runtimes"
)

// BenchmarkCollectLive is one `check` collection of this host.
func BenchmarkCollectLive(b *testing.B) {
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		b.Skip("no /proc")
	}
	fsys := procfs.NewFS("/")
	opt := collect.Options{TopProcesses: 10, TopCgroups: 10, ArenaScan: true, Live: true}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := collect.Collect(fsys, opt); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckCapture is collection plus diagnosis of a real capture held
// in memory: the CPU cost of memdoctor itself, without the kernel's.
func BenchmarkCheckCapture(b *testing.B) {
	fsys, prov, err := capture.LoadFile(filepath.Join("..", "..", "testdata", "captures", "malloc-arenas-6.18-x86_64-hybrid.txtar"))
	if err != nil {
		b.Fatal(err)
	}
	pfs := procfs.NewFSFrom(fsys, prov.PageSize)
	opt := collect.Options{TopProcesses: 10, TopCgroups: 10, ArenaScan: true}
	b.ReportAllocs()
	for b.Loop() {
		res, err := collect.Collect(pfs, opt)
		if err != nil {
			b.Fatal(err)
		}
		diagnose.Run(diagnose.Data{Latest: &res.Snapshot, Source: "bench", Notes: res.Notes})
	}
}

// BenchmarkCollectRecord is one of the recorder's samples of this host
// (the top 50 processes and their runtimes, without discovery), with the
// memo the recorder keeps from one sample to the next.
func BenchmarkCollectRecord(b *testing.B) {
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		b.Skip("no /proc")
	}
	fsys := procfs.NewFS("/")
	opt := collect.Profile(collect.Record, 50, true)
	opt.ExeMemo = &runtimes.ExeMemo{}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := collect.Collect(fsys, opt); err != nil {
			b.Fatal(err)
		}
	}
}
