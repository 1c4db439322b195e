package cgroups

import (
	"strings"
	"testing"
)

const (
	cid  = "4a1f2c3d5e6b7a8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e"
	uid  = "0f9e8d7c-6b5a-4938-8271-605f4e3d2c1b"
	uidU = "0f9e8d7c_6b5a_4938_8271_605f4e3d2c1b"
)

func TestName(t *testing.T) {
	t.Parallel()
	cases := []struct {
		path string
		want Identity
	}{
		{"/", Identity{Name: "/"}},
		{"/system.slice", Identity{Kind: "systemd", Unit: "system.slice", Name: "system.slice"}},
		{"/system.slice/nginx.service", Identity{Kind: "systemd", Unit: "nginx.service", Name: "nginx.service"}},
		{"/user.slice/user-1000.slice/session-3.scope", Identity{Kind: "systemd", Unit: "session-3.scope", Name: "session-3.scope"}},
		{"/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-firefox-2345.scope",
			Identity{Kind: "systemd", Unit: "app-gnome-firefox-2345.scope", Name: "app-gnome-firefox-2345.scope"}},
		{"/system.slice/docker-" + cid + ".scope", Identity{Kind: "container", Runtime: "docker", ContainerID: cid, Unit: "docker-" + cid + ".scope", Name: "docker " + cid[:12]}},
		{"/docker/" + cid, Identity{Kind: "container", Runtime: "docker", ContainerID: cid, Name: "docker " + cid[:12]}},
		{"/machine.slice/libpod-" + cid + ".scope", Identity{Kind: "container", Runtime: "podman", ContainerID: cid, Unit: "libpod-" + cid + ".scope", Name: "podman " + cid[:12]}},
		{"/system.slice/crio-conmon-" + cid + ".scope", Identity{Kind: "systemd", Unit: "crio-conmon-" + cid + ".scope", Name: "crio-conmon-" + cid + ".scope"}},
		// Kubernetes, systemd driver: Burstable, BestEffort, Guaranteed.
		{"/kubepods.slice", Identity{Kind: "kubernetes", Unit: "kubepods.slice", Name: "kubepods"}},
		{"/kubepods.slice/kubepods-burstable.slice", Identity{Kind: "kubernetes", QoS: "burstable", Unit: "kubepods-burstable.slice", Name: "kubepods burstable"}},
		{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice",
			Identity{Kind: "kubernetes", QoS: "burstable", PodUID: uid, Unit: "kubepods-burstable-pod" + uidU + ".slice", Name: "pod " + uid}},
		{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + cid + ".scope",
			Identity{Kind: "kubernetes", Runtime: "containerd", ContainerID: cid, QoS: "burstable", PodUID: uid, Unit: "cri-containerd-" + cid + ".scope", Name: "pod " + uid + " containerd " + cid[:12]}},
		{"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidU + ".slice/crio-" + cid + ".scope",
			Identity{Kind: "kubernetes", Runtime: "cri-o", ContainerID: cid, QoS: "besteffort", PodUID: uid, Unit: "crio-" + cid + ".scope", Name: "pod " + uid + " cri-o " + cid[:12]}},
		{"/kubepods.slice/kubepods-pod" + uidU + ".slice/docker-" + cid + ".scope",
			Identity{Kind: "kubernetes", Runtime: "docker", ContainerID: cid, QoS: "guaranteed", PodUID: uid, Unit: "docker-" + cid + ".scope", Name: "pod " + uid + " docker " + cid[:12]}},
		// Kubernetes, cgroupfs driver.
		{"/kubepods", Identity{Kind: "kubernetes", Name: "kubepods"}},
		{"/kubepods/besteffort", Identity{Kind: "kubernetes", QoS: "besteffort", Name: "kubepods besteffort"}},
		{"/kubepods/burstable/pod" + uid, Identity{Kind: "kubernetes", QoS: "burstable", PodUID: uid, Name: "pod " + uid}},
		{"/kubepods/burstable/pod" + uid + "/" + cid, Identity{Kind: "kubernetes", QoS: "burstable", PodUID: uid, ContainerID: cid, Name: "pod " + uid + " container " + cid[:12]}},
		{"/kubepods/pod" + uid + "/" + cid, Identity{Kind: "kubernetes", QoS: "guaranteed", PodUID: uid, ContainerID: cid, Name: "pod " + uid + " container " + cid[:12]}},
		// CRI-O, cgroupfs driver: crio-<id> with no .scope is the
		// container; crio-conmon-<id> is its monitor, named as its pod
		// (as the systemd driver's crio-conmon-<id>.scope below).
		{"/kubepods/burstable/pod" + uid + "/crio-" + cid,
			Identity{Kind: "kubernetes", Runtime: "cri-o", QoS: "burstable", PodUID: uid, ContainerID: cid, Name: "pod " + uid + " cri-o " + cid[:12]}},
		{"/kubepods/pod" + uid + "/crio-" + cid,
			Identity{Kind: "kubernetes", Runtime: "cri-o", QoS: "guaranteed", PodUID: uid, ContainerID: cid, Name: "pod " + uid + " cri-o " + cid[:12]}},
		{"/kubepods/burstable/pod" + uid + "/crio-conmon-" + cid, Identity{Kind: "kubernetes", QoS: "burstable", PodUID: uid, Name: "pod " + uid}},
		{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/crio-conmon-" + cid + ".scope",
			Identity{Kind: "kubernetes", QoS: "burstable", PodUID: uid, Unit: "crio-conmon-" + cid + ".scope", Name: "pod " + uid}},
		{"/kubepods/burstable/pod" + uid + "/crio-" + cid[:12], Identity{Kind: "kubernetes", QoS: "burstable", PodUID: uid, Name: "pod " + uid}},
		// A kubelet with its own cgroup root.
		{"/kube.slice/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice",
			Identity{Kind: "kubernetes", QoS: "burstable", PodUID: uid, Unit: "kubepods-burstable-pod" + uidU + ".slice", Name: "pod " + uid}},
		// Not a container: a short id, a plain directory.
		{"/docker/abc", Identity{Name: "abc"}},
		{"/memdoctor-test/leaf", Identity{Name: "leaf"}},
	}
	for _, c := range cases {
		if got := Name(c.path); got != c.want {
			t.Errorf("Name(%q)\n got %+v\nwant %+v", c.path, got, c.want)
		}
	}
}

// FuzzName: any path, however hostile, names without panicking, with a
// name that is a part of the path (or derived from ids found in it).
func FuzzName(f *testing.F) {
	for _, s := range []string{"/", "", "/kubepods/burstable/pod" + uid + "/" + cid, "/kubepods.slice/kubepods-pod" + uidU + ".slice",
		"/system.slice/docker-" + cid + ".scope", "kubepods-.slice", "/kubepods.slice/kubepods-burstable-pod.slice", "//\x00/\xff.scope"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		id := Name(p)
		if id.Name == "" && strings.Trim(p, "/") != "" && !strings.HasSuffix(p, "/") && !strings.Contains(p, "//") {
			t.Errorf("Name(%q) has no name: %+v", p, id)
		}
		if len(id.Name) > len(p)+len("pod  container ")+12 {
			t.Errorf("Name(%q) = %q: longer than its path allows", p, id.Name)
		}
	})
}
