package cgroups

import (
	"slices"
	"testing"
)

func TestMatch(t *testing.T) {
	t.Parallel()
	const (
		pod = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod3b7e1c2a_94d0_4f8e_a1b2_6c5d4e3f2a1b.slice"
		ctr = pod + "/cri-containerd-1f2e3d4c5b6a79880716253443526170f1e2d3c4b5a6978879605a4b3c2d1e0f.scope"
	)
	paths := []string{"/", "/system.slice", "/system.slice/nginx.service", "/system.slice/nginx.service/worker",
		"/system.slice/postgresql.service", "/kubepods.slice", "/kubepods.slice/kubepods-burstable.slice", pod, ctr,
		"/docker/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
	for _, c := range []struct {
		q    string
		want string
	}{
		{"/system.slice/nginx.service", "/system.slice/nginx.service"},
		{"/system.slice/nginx.service/", "/system.slice/nginx.service"},
		{"nginx.service", "/system.slice/nginx.service"},
		{"pod 3b7e1c2a-94d0-4f8e-a1b2-6c5d4e3f2a1b", pod},
		{"3b7e1c2a-94d0-4f8e-a1b2-6c5d4e3f2a1b", pod},
		{"1f2e3d4c5b6a", ctr},
		{"0123456789abcdef", "/docker/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		{"worker", "/system.slice/nginx.service/worker"},
	} {
		found, near := Match(paths, c.q)
		if len(found) != 1 || found[0] != c.want {
			t.Errorf("Match(%q) = %v (near %v), want %s", c.q, found, near, c.want)
		}
	}
	found, near := Match(paths, "ngnix.service")
	if len(found) != 0 || len(near) == 0 || near[0] != "/system.slice/nginx.service" {
		t.Errorf("a misspelt unit: found %v, near %v", found, near)
	}
	if _, near := Match(paths, "/system.slice/postgres"); !slices.Contains(near, "/system.slice/postgresql.service") {
		t.Errorf("a path cut short: near %v", near)
	}
	if found, near := Match(paths, "1f2e3d"); len(found) != 0 || !slices.Contains(near, ctr) {
		t.Errorf("a short id prefix matches nothing for sure but is close: found %v near %v", found, near)
	}
	if found, near := Match(paths, "zzzzzzzzzzzz"); len(found)+len(near) != 0 {
		t.Errorf("nothing like it: found %v near %v", found, near)
	}
}
