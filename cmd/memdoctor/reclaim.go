package main

import (
	"time"

	"github.com/memdoctor/memdoctor/internal/render/text"
	"github.com/memdoctor/memdoctor/internal/treat"
	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newReclaimCmd) }

func newReclaimCmd() *cobra.Command {
	var (
		apply  bool
		asJSON bool
		cgroup string
		wait   time.Duration
		root   string
	)
	cmd := &cobra.Command{
		Use:   "reclaim",
		Short: "Free dying memory cgroups by reclaiming what still holds them (cgroup v2 on 5.19+, or v1); dry run unless --apply",
		Long: `reclaim frees removed memory cgroups that the kernel still keeps because pages
charged to them live on (the finding on dying memory cgroups). Reclaim started at a
cgroup walks its whole subtree, dying cgroups included, so memdoctor writes to
the memory.reclaim of each cgroup that has dying cgroups below it (the job
runner's parent cgroup, for instance) the clean page cache that the parent and
its dying descendants hold: its memory.stat file (less dirty and writeback)
less that of its live children, in chunks of 4 MiB; then, if dying cgroups
remain, its reclaimable slab, so that the kernel's shrinkers drop the inodes
that still pin them. The live children's cache is not asked for, though
reclaim may still take some of it. Dirty cache pins its cgroup until it is
written back: it is reported, not asked for (sync, then run again).

Without --apply nothing is changed: reclaim shows what it would write where.
With --apply it writes, waits up to --wait for the kernel to free the cgroups
(it does so asynchronously) and shows the dying count before and after. The
kernel keeps reclaiming as long as it makes progress, which can last minutes:
a write still running at --wait is stopped (the kernel returns early on a
signal), and the result says so.
Dying cgroups right below the root are reported, not reclaimed: the root has
no memory.current to bound the request (drop_caches is the host-wide tool).

On cgroup v1 (no memory.reclaim, no count of dying cgroups per cgroup),
--cgroup names the live cgroup above the dying ones (the job runner's) and
--apply writes 0 to its memory.force_empty, which reclaims everything
charged to it and to the removed cgroups below it; the dying count is
/proc/cgroups' less the live cgroups. The root is refused (it has no
memory.force_empty), and so is a cgroup with tasks in it or below it:
force_empty would reclaim their live memory too (page cache dropped,
anonymous memory swapped out).`,
		Example: `  memdoctor reclaim                   # what --apply would write, and where
  memdoctor reclaim --apply
  memdoctor reclaim --cgroup /jobs --apply --json
  memdoctor reclaim --cgroup /jobs --apply        # cgroup v1: memory.force_empty of /jobs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := treat.Reclaim(root, cgroup, apply, wait)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), r)
			}
			return text.ReclaimText(cmd.OutOrStdout(), r)
		},
	}
	cmd.Flags().BoolVar(&apply, "apply", false, "write to memory.reclaim, or on v1 memory.force_empty (without it nothing is changed)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the plan (and with --apply the result) as JSON")
	cmd.Flags().StringVar(&cgroup, "cgroup", "/", "only this subtree: a path below the cgroup2 mount, or on v1 the memory mount (/jobs; required on v1)")
	cmd.Flags().DurationVar(&wait, "wait", 30*time.Second, "with --apply, how long reclaim may run and the kernel may take to free the cgroups (a write to memory.reclaim still running then is stopped)")
	cmd.Flags().StringVar(&root, "root", "/", "the host's root (where /proc and /sys are)")
	_ = cmd.Flags().MarkHidden("root")
	return cmd
}
