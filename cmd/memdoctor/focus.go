package main

import (
	"strings"

	"github.com/memdoctor/memdoctor/internal/analysis"
	"github.com/spf13/cobra"
)

// focusFlags select and rank check's processes: --pid, --cgroup, --user,
// --sort, and the per-user totals of --users.
type focusFlags struct {
	analysis.Focus
}

func (f *focusFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.PIDs, "pid", nil, "only these processes: `PID`, repeatable or a comma list (--pid 1,2 --pid 3)")
	cmd.Flags().StringVar(&f.Cgroup, "cgroup", "", "only the processes in this cgroup or below: `PATH` as in /proc/PID/cgroup (/system.slice/x.service) or under /sys/fs/cgroup")
	cmd.Flags().StringVar(&f.User, "user", "", "only the processes of this user: `NAME` or UID")
	cmd.Flags().StringVar(&f.Sort, "sort", "pss", "rank processes by `KEY`: "+strings.Join(analysis.SortKeys, ", "))
	cmd.Flags().BoolVar(&f.Users, "users", false, "add per-user totals (processes, swap, USS, PSS, RSS) as smem -u does; reads smaps_rollup of every selected process")
}
