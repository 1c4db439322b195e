package cgroups

import (
	"strings"
	"testing"
)

func TestFocusPaths(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"/system.slice/nginx.service/", []string{"/system.slice/nginx.service"}},
		{"/sys/fs/cgroup/system.slice/nginx.service", []string{"/system.slice/nginx.service"}},
		{"/sys/fs/cgroup/memory/jobs/1", []string{"/memory/jobs/1", "/jobs/1"}},
		{"/sys/fs/cgroup", []string{"/"}},
		{"/sys/fs/cgroup/user.slice", []string{"/user.slice"}},
		{"/sys/fs/cgroup/memory", []string{"/memory", "/"}},
	} {
		got := FocusPaths(c.in)
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("FocusPaths(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
