package procfs

// /proc/cgroups (kernel/cgroup/cgroup-v1.c, proc_cgroupstats_show), 2.6.24+:
//
//	#subsys_name	hierarchy	num_cgroups	enabled
//	cpuset	3	1	1
//	memory	4	35	1
//	hugetlb	0	1	1
//
// Tab-separated. num_cgroups counts the cgroups of the controller's
// hierarchy including dying (removed but still pinned) ones; it is per
// hierarchy, not per controller. hierarchy 0 means the controller is bound
// to the cgroup v2 tree (or to none), whose num_cgroups then counts the whole
// v2 tree. Since ≈6.12 controllers without v1 support are not listed.
// Columns are mapped by the header's names; unknown ones go to
// CgroupSubsys.Extra.

// Cgroups reads proc/cgroups.
func (f FS) Cgroups() ([]CgroupSubsys, error) {
	return parseFile(f, "proc/cgroups", func(data []byte) ([]CgroupSubsys, error) {
		return ParseCgroups(data)
	})
}

const cgroupsFile = "proc/cgroups"

const cgroupsDefaultHeader = "#subsys_name hierarchy num_cgroups enabled"

// ParseCgroups parses proc/cgroups.
func ParseCgroups(data []byte) ([]CgroupSubsys, error) {
	s := string(data)
	var cols []string
	out := make([]CgroupSubsys, 0, lineHint(s, 8))
	for line, t := range lines(s) {
		t = trimSpace(t)
		if t[0] == '#' {
			c, err := parseCgroupsHeader(t, line)
			if err != nil {
				return nil, err
			}
			cols = c
			continue
		}
		if cols == nil {
			cols, _ = parseCgroupsHeader(cgroupsDefaultHeader, 0)
		}
		var cs CgroupSubsys
		rest := t
		for i, col := range cols {
			var f string
			f, rest = nextField(rest)
			if f == "" {
				return nil, perr(cgroupsFile, line, "%s has %d of the %d columns of the header", quote(t), i, len(cols))
			}
			if col == "subsys_name" {
				cs.Name = f
				continue
			}
			v, ok := atoi(f)
			if !ok {
				return nil, perr(cgroupsFile, line, "%s: column %s is %s, not a number", quote(t), col, quote(f))
			}
			switch col {
			case "hierarchy":
				if v < 0 || v > 1<<30 {
					return nil, perr(cgroupsFile, line, "%s: bad hierarchy", quote(t))
				}
				cs.Hierarchy = int(v)
			case "num_cgroups":
				cs.NumCgroups = v
			case "enabled":
				if v != 0 && v != 1 {
					return nil, perr(cgroupsFile, line, "%s: enabled is %d, not 0 or 1", quote(t), v)
				}
				cs.Enabled = v == 1
			default:
				if cs.Extra == nil {
					cs.Extra = make(map[string]int64)
				}
				cs.Extra[col] = v
			}
		}
		if trimSpace(rest) != "" {
			return nil, perr(cgroupsFile, line, "%s has more than the %d columns of the header", quote(t), len(cols))
		}
		out = append(out, cs)
	}
	return out, nil
}

// parseCgroupsHeader parses "#subsys_name	hierarchy	num_cgroups	enabled".
func parseCgroupsHeader(t string, line int) ([]string, error) {
	rest := t[1:]
	n := countFields(rest)
	cols := make([]string, 0, n)
	for {
		var f string
		f, rest = nextField(rest)
		if f == "" {
			break
		}
		cols = append(cols, f)
	}
	if len(cols) == 0 || cols[0] != "subsys_name" {
		return nil, perr(cgroupsFile, line, "header %s does not start with \"#subsys_name\"", quote(t))
	}
	return cols, nil
}
