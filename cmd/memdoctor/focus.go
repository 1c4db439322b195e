package main

import (
	"strings"

	"github.com/memdoctor/memdoctor/internal/usecase/live"
	"github.com/spf13/cobra"
)

// focusFlags select and rank check's processes: --pid, --cgroup, --user,
// --sort, and the per-user totals of --users.
type focusFlags struct {
	live.Focus
}

func (f *focusFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.PIDs, "pid", nil, "only these processes: `PID`, repeatable or a comma list (--pid 1,2 --pid 3)")
	cmd.Flags().StringVar(&f.Cgroup, "cgroup", "", "focus on one cgroup: its limits, charge, events, pressure, only the findings about it and the processes in it or below; `PATH` as in /proc/PID/cgroup (/system.slice/x.service) or under /sys/fs/cgroup, or NAME: a systemd unit, a pod uid or a container id (12 hex digits or more)")
	cmd.Flags().StringVar(&f.User, "user", "", "only the processes of this user: `NAME` or UID")
	cmd.Flags().StringVar(&f.Sort, "sort", "pss", "rank processes by `KEY`: "+strings.Join(live.SortKeys, ", "))
	cmd.Flags().BoolVar(&f.Users, "users", false, "add per-user totals (processes, swap, USS, PSS, RSS) as smem -u does; reads smaps_rollup of every selected process")
}
