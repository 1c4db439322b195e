package live

import (
	"errors"
	"fmt"
	"os/user"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/memdoctor/memdoctor/internal/cgroups"
	"github.com/memdoctor/memdoctor/internal/collect"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/procfs"
	"github.com/memdoctor/memdoctor/internal/sample"
)

// SortKeys are what check can rank processes by.
var SortKeys = collect.SortKeys

// Focus selects and ranks check's processes: --pid, --cgroup, --user,
// --sort, and the per-user totals of --users.
type Focus struct {
	PIDs   []string
	Cgroup string
	User   string
	Sort   string
	Users  bool

	parsed collect.ProcessFocus
	// cgroup is the memory cgroup --cgroup resolved to (relative to the
	// memory hierarchy's root), "" when none.
	cgroup string
}

// flagValue rejects a value that is another flag: `--pid --json` must not
// read "--json" as the pid.
func flagValue(flag, v, want string) error {
	if strings.HasPrefix(v, "-") && len(v) > 1 {
		if _, err := strconv.Atoi(v); err != nil || flag != "--pid" {
			return fmt.Errorf("%s needs %s, got the flag %q (write %s VALUE)", flag, want, v, flag)
		}
	}
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("%s needs %s, got an empty value", flag, want)
	}
	return nil
}

// Parse checks the values and builds the collector's focus.
func (f *Focus) Parse(top int) error {
	var pf collect.ProcessFocus
	if !slices.Contains(collect.SortKeys, f.Sort) {
		return fmt.Errorf("--sort %q: want one of %s", f.Sort, strings.Join(collect.SortKeys, ", "))
	}
	for _, v := range f.PIDs {
		if err := flagValue("--pid", v, "a process id"); err != nil {
			return err
		}
		for _, x := range strings.Split(v, ",") {
			x = strings.TrimSpace(x)
			pid, err := strconv.Atoi(x)
			if err != nil || pid <= 0 {
				return fmt.Errorf("--pid %q: %q is not a process id (a positive number)", v, x)
			}
			pf.PIDs = append(pf.PIDs, pid)
		}
	}
	if f.Cgroup != "" {
		if err := flagValue("--cgroup", f.Cgroup, "a cgroup path or name"); err != nil {
			return err
		}
		pf.Cgroup = f.Cgroup
	}
	if f.User != "" {
		if err := flagValue("--user", f.User, "a user name or uid"); err != nil {
			return err
		}
		uid, err := lookupUID(f.User)
		if err != nil {
			return err
		}
		pf.UID = &uid
	}
	if (len(pf.PIDs) > 0 || pf.UID != nil) && top == 0 && !f.Users {
		return fmt.Errorf("--pid and --user select processes to show: use them with --top above 0 (or --users)")
	}
	f.parsed = pf
	return nil
}

// lookupUID resolves a user name or a numeric uid.
func lookupUID(s string) (int, error) {
	if uid, err := strconv.Atoi(s); err == nil {
		if uid < 0 {
			return 0, fmt.Errorf("--user %q: a uid is 0 or more", s)
		}
		return uid, nil
	}
	u, err := user.Lookup(s)
	if err != nil {
		return 0, fmt.Errorf("--user %q: unknown user (not in the user database; give a numeric uid for a user only the processes know)", s)
	}
	return strconv.Atoi(u.Uid)
}

// check fails, before anything is collected, on a live host for pids that
// do not exist, and on any host for a cgroup that names no memory cgroup
// (a path of another v1 hierarchy still selects processes on a live host).
func (f *Focus) check(fs procfs.FS, live bool, names *cgroups.Runtime) error {
	for _, pid := range f.parsed.PIDs {
		if !live {
			break
		}
		if !fs.Exists("proc/" + strconv.Itoa(pid)) {
			return fmt.Errorf("--pid %d: no such process", pid)
		}
	}
	if f.parsed.Cgroup != "" {
		return f.resolveCgroup(fs, live, names)
	}
	return nil
}

// memoryHierarchy is the FS-relative mount point of the hierarchy holding
// the memory controller, as the collector reads it: v1's memory hierarchy
// when mounted (hybrid hosts too), else the unified one.
func memoryHierarchy(fs procfs.FS) (root string, v1 bool, ok bool) {
	m, _, err := cgroups.FindMounts(fs)
	if err != nil {
		return "", false, false
	}
	return m.Memory()
}

// maxFocusDirs bounds the walk that resolves --cgroup.
const maxFocusDirs = 100000

// resolveCgroup turns --cgroup (a path as in /proc/PID/cgroup, a path
// under /sys/fs/cgroup, or a name: systemd unit, pod, container id) into a
// memory cgroup whose accounting check shows, and the processes' focus.
// Names from the runtimes' state (a pod's or container's) match too.
// A name must match one memory cgroup; a path that is no memory cgroup
// (another v1 hierarchy's) still selects processes on a live host.
func (f *Focus) resolveCgroup(fs procfs.FS, live bool, names *cgroups.Runtime) error {
	q := f.parsed.Cgroup
	root, v1, ok := memoryHierarchy(fs)
	isPath := strings.HasPrefix(q, "/")
	if !ok {
		if isPath && !live {
			return nil
		}
		if isPath {
			return f.checkProcessCgroup(fs)
		}
		return fmt.Errorf("--cgroup %s: no memory cgroup hierarchy to look the name up in (give a path)", q)
	}
	rel := q
	if isPath {
		rel = cgroups.InHierarchy(q, root, v1)
	}
	briefs, _, _ := cgroups.Reader{FS: fs, Root: root, V1: v1}.Scan(maxFocusDirs)
	paths := make([]string, 0, len(briefs))
	for _, b := range briefs {
		paths = append(paths, b.Path)
	}
	names.Begin()
	found, near := cgroups.MatchNamed(paths, rel, names.Name)
	switch {
	case len(found) == 1:
		f.cgroup = found[0]
		if !isPath {
			f.parsed.Cgroup = found[0]
		}
		return nil
	case len(found) > 1:
		return fmt.Errorf("--cgroup %s: matches %d memory cgroups, give one's path: %s", q, len(found), strings.Join(found, ", "))
	}
	if isPath && live {
		// Not a memory cgroup, but maybe another hierarchy's: its processes.
		if err := f.checkProcessCgroup(fs); err == nil {
			return nil
		}
	}
	msg := fmt.Sprintf("--cgroup %s: no memory cgroup has this path or name (a systemd unit, a pod uid, a container id of 12 hex digits or more, a pod or container name)", q)
	if isPath {
		msg = fmt.Sprintf("--cgroup %s: no such cgroup: no memory cgroup has this path or name (see /proc/PID/cgroup for a process' path)", q)
	}
	if len(near) > 0 {
		msg += "; close: " + strings.Join(near, ", ")
	}
	return errors.New(msg)
}

// checkProcessCgroup accepts a cgroup path of any hierarchy as a focus on
// its processes.
func (f *Focus) checkProcessCgroup(fs procfs.FS) error {
	return cgroups.AnyHierarchyHas(fs, f.parsed.Cgroup)
}

// apply ranks the report's processes by --sort and says what the focus
// selected.
func (f *Focus) apply(rep *model.Report, res *collect.Result) {
	key := func(p model.Process) int64 {
		switch f.Sort {
		case "rss":
			return p.RSSBytes
		case "swap":
			return p.SwapBytes
		case "uss":
			if p.USSBytes != nil {
				return *p.USSBytes
			}
		default:
			if p.PSSBytes != nil {
				return *p.PSSBytes
			}
		}
		return p.RSSBytes
	}
	sort.SliceStable(rep.Processes, func(i, j int) bool { return key(rep.Processes[i]) > key(rep.Processes[j]) })
	if f.cgroup != "" {
		hidden := model.FocusCgroup(rep, &res.Snapshot, f.cgroup)
		rep.Notes = append(rep.Notes, sample.Note{Source: "check", Message: fmt.Sprintf("findings limited to cgroup %s: %d about it, %d others left out", f.cgroup, len(rep.Findings), hidden),
			Hides: "the findings about the rest of the host (run check without --cgroup for them)"})
	}
	if !f.parsed.Active() {
		return
	}
	var sel []string
	if len(f.parsed.PIDs) > 0 {
		sel = append(sel, "--pid "+strings.Join(f.PIDs, ","))
	}
	if f.parsed.Cgroup != "" {
		sel = append(sel, "--cgroup "+f.parsed.Cgroup)
	}
	if f.parsed.UID != nil {
		sel = append(sel, "--user "+f.User)
	}
	n := int(res.Snapshot.Value("memdoctor_processes_focused"))
	msg := fmt.Sprintf("processes limited to %s: %d matched", strings.Join(sel, " "), n)
	if n == 0 {
		msg += " (none: check the selection)"
	}
	hides := "every other process, and per-process findings about them (host-wide rows and findings still cover the whole host)"
	if f.cgroup != "" {
		hides = "every other process"
	}
	rep.Notes = append(rep.Notes, sample.Note{Source: "check", Message: msg, Hides: hides})
}
