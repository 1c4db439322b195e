package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/memdoctor/memdoctor/internal/cgreclaim"
	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/termsafe"
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
		Short: "Free dying memory cgroups by reclaiming what still holds them (cgroup v2, kernel 5.19+); dry run unless --apply",
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
no memory.current to bound the request (drop_caches is the host-wide tool).`,
		Example: `  memdoctor reclaim                   # what --apply would write, and where
  memdoctor reclaim --apply
  memdoctor reclaim --cgroup /jobs --apply --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			plan, err := cgreclaim.MakePlan(procfs.NewFS(root), cgroup)
			if errors.Is(err, cgreclaim.ErrNoV2) {
				return fmt.Errorf("%w: reclaim works on cgroup v2 (on v1, write 0 to a cgroup's memory.force_empty before removing it)", err)
			}
			if err != nil {
				return err
			}
			if !apply {
				if asJSON {
					return writeJSON(out, map[string]any{"plan": plan, "applied": false})
				}
				return reclaimPlanText(out, plan, false)
			}
			res, err := cgreclaim.Apply(root, plan, wait)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out, map[string]any{"plan": plan, "applied": true, "result": res})
			}
			if err := reclaimPlanText(out, plan, true); err != nil {
				return err
			}
			for _, o := range res.Outcomes {
				switch {
				case o.Error != "":
					_, _ = fmt.Fprintf(out, "  %s: %s\n", termsafe.Escape(o.Path), termsafe.Escape(o.Error))
				case o.Partial:
					_, _ = fmt.Fprintf(out, "  %s: the kernel reclaimed less than asked (pages in use, dirty or mapped)\n", termsafe.Escape(o.Path))
				}
			}
			_, err = fmt.Fprintf(out, "dying cgroups: %d before, %d after (%.1fs)\n", res.Before, res.After, res.Waited.Seconds())
			return err
		},
	}
	cmd.Flags().BoolVar(&apply, "apply", false, "write to memory.reclaim (without it nothing is changed)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the plan (and with --apply the result) as JSON")
	cmd.Flags().StringVar(&cgroup, "cgroup", "/", "only this subtree: a path below the cgroup2 mount (/jobs)")
	cmd.Flags().DurationVar(&wait, "wait", 30*time.Second, "with --apply, how long reclaim may run and the kernel may take to free the cgroups (a write to memory.reclaim still running then is stopped)")
	cmd.Flags().StringVar(&root, "root", "/", "the host's root (where /proc and /sys are)")
	_ = cmd.Flags().MarkHidden("root")
	return cmd
}

func reclaimPlanText(w io.Writer, p *cgreclaim.Plan, applied bool) error {
	hb := diagnose.HumanBytes
	pr := func(format string, a ...any) { _, _ = fmt.Fprintf(w, format, a...) }
	pr("memdoctor reclaim: %d dying cgroups below /%s\n", p.Dying, termsafe.Escape(p.Mount))
	if !p.HasReclaim {
		pr("  memory.reclaim is missing (kernel before 5.19): drop the page cache host-wide instead (sync; echo 1 > /proc/sys/vm/drop_caches)\n")
	}
	verb := "would write"
	if applied {
		verb = "wrote"
	}
	for _, t := range p.Targets {
		pr("  %s: %d dying below it; %s %d (%s) to /%s%s/memory.reclaim\n", termsafe.Escape(t.Path), t.Dying, verb, t.Bytes, hb(t.Bytes),
			termsafe.Escape(p.Mount), termsafe.Escape(t.Path))
		if t.Dirty > 0 {
			pr("    %s of dirty cache not asked for: it pins its cgroups until written back (sync, then run again)\n", hb(t.Dirty))
		}
	}
	if p.RootDying > 0 {
		pr("  /: %d dying right below the root, not reclaimed here (no memory.current to bound the request)\n", p.RootDying)
	}
	if len(p.Targets) == 0 {
		pr("  nothing to reclaim\n")
	} else if !applied {
		pr("dry run: nothing changed; --apply writes it\n")
	}
	return nil
}
