package procfs

// /proc/PID/mountinfo (fs/proc_namespace.c, show_mountinfo), 2.6.26+:
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//	(1)(2) (3)  (4)   (5)      (6)       (7)   (8) (9)    (10)       (11)
//
// (1) mount id, (2) parent id, (3) major:minor, (4) root within the
// filesystem, (5) mount point, (6) per-mount options, (7) zero or more
// optional fields (shared:N, master:N, propagate_from:N, unbindable),
// (8) the separator "-", (9) filesystem type, (10) source, (11)
// per-superblock options. Fields are separated by single blanks; blanks,
// tabs, newlines and backslashes inside paths are printed as \040, \011,
// \012 and \134. The source may be empty (two blanks in a row), so fields
// are split on single blanks, not runs.

import (
	"fmt"
	"strings"
)

// Mountinfo reads proc/self/mountinfo; see ParseMountinfo.
func (f FS) Mountinfo() (mounts []Mount, skipped []*ParseError, err error) {
	data, err := f.ReadFile("proc/self/mountinfo")
	if err != nil {
		return nil, nil, err
	}
	return ParseMountinfo(data)
}

const mountinfoFile = "proc/self/mountinfo"

// ParseMountinfo parses a mountinfo file. A malformed line (seen on real
// kernels: an empty mount point) is skipped and returned in skipped, one
// *ParseError each, so one bad mount does not hide all the others; err is
// set only when lines were there and none of them could be read.
func ParseMountinfo(data []byte) (mounts []Mount, skipped []*ParseError, err error) {
	s := string(data)
	out := make([]Mount, 0, lineHint(s, 32))
	for line, t := range lines(s) {
		t = strings.TrimRight(t, "\r")
		m, why := parseMount(t)
		if why != "" {
			skipped = append(skipped, &ParseError{File: mountinfoFile, Line: line, Err: fmt.Errorf("%w: %s: %s", ErrMalformed, quote(t), why)})
			continue
		}
		out = append(out, m)
	}
	if len(out) == 0 && len(skipped) > 0 {
		return nil, skipped, skipped[0]
	}
	return out, skipped, nil
}

func parseMount(t string) (Mount, string) {
	var m Mount
	before, after, ok := strings.Cut(t, " - ")
	if !ok {
		return m, "no \" - \" separator"
	}
	// Before the separator: id parent dev root mountpoint options [optional...]
	var f [6]string
	rest := before
	for i := range f {
		var ok bool
		f[i], rest, ok = strings.Cut(rest, " ")
		if f[i] == "" || (!ok && i < len(f)-1) {
			return Mount{}, "too few fields before \" - \""
		}
		if !ok {
			rest = ""
		}
	}
	id, ok1 := atou(f[0])
	parent, ok2 := atou(f[1])
	if !ok1 || !ok2 || id > 1<<31 || parent > 1<<31 {
		return Mount{}, "bad mount or parent id"
	}
	if maj, mnr, ok := strings.Cut(f[2], ":"); !ok || !isDigits(maj) || !isDigits(mnr) {
		return Mount{}, "bad major:minor"
	}
	m.MountID, m.ParentID, m.Dev = int(id), int(parent), f[2]
	m.Root = unescapeOctal(f[3])
	m.MountPoint = unescapeOctal(f[4])
	m.Options = strings.Split(f[5], ",")
	if rest != "" {
		m.Optional = strings.Split(rest, " ")
	}
	// After it: fstype source superoptions
	fstype, rest, ok := strings.Cut(after, " ")
	if !ok || fstype == "" {
		return Mount{}, "no filesystem type"
	}
	source, super, ok := strings.Cut(rest, " ")
	if !ok {
		return Mount{}, "no super options"
	}
	m.FSType = unescapeOctal(fstype)
	m.Source = unescapeOctal(source)
	m.SuperOptions = strings.Split(super, ",")
	return m, ""
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// unescapeOctal decodes the kernel's \ooo escapes; other text is returned
// as it is, without allocating.
func unescapeOctal(s string) string {
	i := strings.IndexByte(s, '\\')
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) && s[i+1] <= '3' {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }
