package main

import (
	"time"

	"github.com/memdoctor/memdoctor/internal/usecase/live"
	"github.com/spf13/cobra"
)

// culpritFlags are check's opt-in looks at who made and what pins the dying
// cgroups (live.Culprits).
type culpritFlags struct{ live.Culprits }

func (f *culpritFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.ScanPages, "scan-pages", false, "read /proc/kpagecgroup and /proc/kpageflags (root; about 30 ms per GiB of RAM) to tell how much page cache, dirty, mapped or shmem, pins the dying memory cgroups")
	cmd.Flags().DurationVar(&f.ScanTimeout, "scan-timeout", 30*time.Second, "stop the page scan after this long (the report says it is partial)")
	cmd.Flags().DurationVar(&f.Trace, "trace", 0, "before reading the host, trace for this `long` (root): memory cgroup creation and removal, to name who does it with rates (BPF, else tracefs), and who stalls in direct or cgroup-limit reclaim (BPF)")
	cmd.Flags().StringVar(&f.TraceMethod, "trace-method", "", "force the tracer: bpf or tracefs (default: BPF, else tracefs)")
}
