package text

import (
	"fmt"
	"io"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/termsafe"
	"github.com/memdoctor/memdoctor/internal/treat"
)

// ReclaimText prints the plan, and what applying it did.
func ReclaimText(w io.Writer, r *treat.Reclaimed) error {
	p := r.Plan
	pr := func(format string, a ...any) { _, _ = fmt.Fprintf(w, format, a...) }
	pr("memdoctor reclaim: %d dying cgroups below /%s\n", p.Dying, termsafe.Escape(p.Mount))
	if !p.HasReclaim {
		pr("  memory.reclaim is missing (kernel before 5.19): drop the page cache host-wide instead (sync; echo 1 > /proc/sys/vm/drop_caches)\n")
	}
	verb := "would write"
	if r.Applied {
		verb = "wrote"
	}
	for _, t := range p.Targets {
		if p.V1 {
			pr("  %s: no tasks in it or below it, %s charged to it and to the removed cgroups below it; %s 0 to /%s%s/memory.force_empty\n",
				termsafe.Escape(t.Path), format.Bytes(t.Bytes), verb, termsafe.Escape(p.Mount), termsafe.Escape(t.Path))
			pr("    (cgroup v1: memory.force_empty reclaims all of it; on a cgroup with tasks it would reclaim their live memory, which is why such a cgroup is refused)\n")
			continue
		}
		pr("  %s: %d dying below it; %s %d (%s) to /%s%s/memory.reclaim\n", termsafe.Escape(t.Path), t.Dying, verb, t.Bytes, format.Bytes(t.Bytes),
			termsafe.Escape(p.Mount), termsafe.Escape(t.Path))
		if t.Dirty > 0 {
			pr("    %s of dirty cache not asked for: it pins its cgroups until written back (sync, then run again)\n", format.Bytes(t.Dirty))
		}
	}
	if p.RootDying > 0 {
		pr("  /: %d dying right below the root, not reclaimed here (no memory.current to bound the request)\n", p.RootDying)
	}
	if len(p.Targets) == 0 {
		pr("  nothing to reclaim\n")
	} else if !r.Applied {
		pr("dry run: nothing changed; --apply writes it\n")
	}
	if r.Result == nil {
		return nil
	}
	for _, o := range r.Result.Outcomes {
		switch {
		case o.Error != "":
			pr("  %s: %s\n", termsafe.Escape(o.Path), termsafe.Escape(o.Error))
		case o.Partial:
			pr("  %s: the kernel reclaimed less than asked (pages in use, dirty or mapped)\n", termsafe.Escape(o.Path))
		}
	}
	_, err := fmt.Fprintf(w, "dying cgroups: %d before, %d after (%.1fs)\n", r.Result.Before, r.Result.After, r.Result.Waited.Seconds())
	return err
}
