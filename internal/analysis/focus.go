package analysis

import (
	"fmt"
	"os/user"
	"slices"
	"sort"
	"strconv"
	"strings"

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
		if err := flagValue("--cgroup", f.Cgroup, "a cgroup path"); err != nil {
			return err
		}
		if !strings.HasPrefix(f.Cgroup, "/") {
			return fmt.Errorf("--cgroup %q: want an absolute path, as in /proc/PID/cgroup (/system.slice/x.service) or under /sys/fs/cgroup", f.Cgroup)
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
	if pf.Active() && top == 0 && !f.Users {
		return fmt.Errorf("--pid, --cgroup and --user select processes to show: use them with --top above 0 (or --users)")
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

// check fails on a live host for pids that do not exist and a cgroup path
// that names no cgroup, before anything is collected.
func (f *Focus) check(fs procfs.FS, live bool) error {
	if !live {
		return nil
	}
	for _, pid := range f.parsed.PIDs {
		if !fs.Exists("proc/" + strconv.Itoa(pid)) {
			return fmt.Errorf("--pid %d: no such process", pid)
		}
	}
	if cg := f.parsed.Cgroup; cg != "" {
		if strings.HasPrefix(cg, "/sys/fs/cgroup") {
			if !fs.Exists(strings.TrimPrefix(cg, "/")) {
				return fmt.Errorf("--cgroup %s: no such cgroup directory", cg)
			}
			return nil
		}
		// A /proc/PID/cgroup path: a directory under the v2 root or a v1
		// hierarchy's mount.
		dirs := []string{"sys/fs/cgroup" + cg}
		if ents, err := fs.ReadDir("sys/fs/cgroup"); err == nil {
			for _, e := range ents {
				dirs = append(dirs, "sys/fs/cgroup/"+e.Name()+cg)
			}
		}
		for _, d := range dirs {
			if fs.Exists(strings.TrimSuffix(d, "/")) {
				return nil
			}
		}
		return fmt.Errorf("--cgroup %s: no such cgroup (not under /sys/fs/cgroup; see /proc/PID/cgroup for a process' path)", cg)
	}
	return nil
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
	rep.Notes = append(rep.Notes, sample.Note{Source: "check", Message: msg,
		Hides: "every other process, and per-process findings about them (host-wide rows and findings still cover the whole host)"})
}
