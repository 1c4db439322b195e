package cgroups

// Naming: a cgroup path as its users know it. The shapes, from the
// runtimes' cgroup drivers:
//
//	systemd units and slices:  /system.slice/nginx.service,
//	                           /user.slice/user-1000.slice/session-3.scope
//	Docker:                    /system.slice/docker-<id>.scope (systemd
//	                           driver), /docker/<id> (cgroupfs driver)
//	Podman:                    /machine.slice/libpod-<id>.scope
//	containerd, CRI-O:         cri-containerd-<id>.scope, crio-<id>.scope
//	                           (crio-conmon-<id>.scope is CRI-O's monitor);
//	                           CRI-O's cgroupfs driver: crio-<id> and
//	                           crio-conmon-<id>, no .scope
//	Kubernetes, systemd:       /kubepods.slice/kubepods-<qos>.slice/
//	                           kubepods-<qos>-pod<uid>.slice/<container>.scope
//	                           (Guaranteed pods sit directly below
//	                           kubepods.slice: kubepods-pod<uid>.slice; the
//	                           uid's dashes are underscores)
//	Kubernetes, cgroupfs:      /kubepods/<qos>/pod<uid>/<id>,
//	                           /kubepods/pod<uid>/<id> (Guaranteed)
//
// Names come from the path alone; a pod's or container's own name needs
// the runtime's state (see Runtime) and is never guessed.

import (
	"strings"

	"github.com/memdoctor/memdoctor/internal/cgroups/owner"
)

// Identity is what a cgroup path says about its owner (see owner.Owner,
// the one declaration the report's schema shares).
type Identity = owner.Owner

// Name tells who a cgroup path (relative to its hierarchy's root) belongs
// to. It never fails: an unknown shape gives an Identity with only Name
// (the last component).
func Name(p string) Identity {
	var id Identity
	parts := strings.Split(strings.Trim(p, "/"), "/")
	if len(parts) == 1 && parts[0] == "" {
		id.Name = "/"
		return id
	}
	inKube := false
	for i, c := range parts {
		switch {
		case c == "kubepods" || c == "kubepods.slice":
			inKube = true
			id.Kind = "kubernetes"
			id.QoS = "guaranteed" // until a QoS level says otherwise
		case inKube && (c == "burstable" || c == "besteffort"):
			id.QoS = c
		case inKube && strings.HasPrefix(c, "kubepods-") && strings.HasSuffix(c, ".slice"):
			rest := strings.TrimSuffix(strings.TrimPrefix(c, "kubepods-"), ".slice")
			if q, r, ok := strings.Cut(rest, "-"); ok && (q == "burstable" || q == "besteffort") {
				id.QoS, rest = q, r
			} else if rest == "burstable" || rest == "besteffort" {
				id.QoS, rest = rest, ""
			}
			if uid, ok := strings.CutPrefix(rest, "pod"); ok && uid != "" {
				id.PodUID = strings.ReplaceAll(uid, "_", "-")
			}
		case inKube && strings.HasPrefix(c, "pod") && isUID(c[3:]):
			id.PodUID = c[3:]
		default:
			if rt, cid, ok := containerScope(c); ok {
				id.Runtime, id.ContainerID = rt, cid
				if id.Kind != "kubernetes" {
					id.Kind = "container"
				}
			} else if i > 0 && (parts[i-1] == "docker" || (inKube && id.PodUID != "")) && isHexID(c) {
				id.ContainerID = c
				if parts[i-1] == "docker" {
					id.Runtime = "docker"
				}
				if id.Kind != "kubernetes" {
					id.Kind = "container"
				}
			}
		}
		if isUnit(c) {
			id.Unit = c
			if id.Kind == "" {
				id.Kind = "systemd"
			}
		}
	}
	switch {
	case id.ContainerID != "":
		rt := id.Runtime
		if rt == "" {
			rt = "container"
		}
		id.Name = rt + " " + short(id.ContainerID)
		if id.PodUID != "" {
			id.Name = "pod " + id.PodUID + " " + id.Name
		}
	case id.PodUID != "":
		id.Name = "pod " + id.PodUID
	case id.Kind == "kubernetes":
		id.Name = "kubepods " + id.QoS
		if id.QoS == "guaranteed" && (parts[len(parts)-1] == "kubepods" || parts[len(parts)-1] == "kubepods.slice") {
			id.Name, id.QoS = "kubepods", ""
		}
	case id.Unit != "":
		id.Name = id.Unit
	default:
		id.Name = parts[len(parts)-1]
	}
	return id
}

// containerScope recognises a runtime's systemd scope: docker-<id>.scope,
// cri-containerd-<id>.scope, crio-<id>.scope, libpod-<id>.scope; and
// CRI-O's cgroupfs directory, crio-<id> with no .scope. CRI-O's monitor,
// crio-conmon-<id>(.scope), is not the container: "conmon-<id>" is not
// a hex id, so it is named as its parent (the pod) or as its unit, in
// both drivers alike.
func containerScope(c string) (runtime, id string, ok bool) {
	base, ok := strings.CutSuffix(c, ".scope")
	if !ok {
		if rest, ok := strings.CutPrefix(c, "crio-"); ok && isHexID(rest) {
			return "cri-o", rest, true
		}
		return "", "", false
	}
	for _, p := range []struct{ prefix, runtime string }{
		{"docker-", "docker"}, {"cri-containerd-", "containerd"}, {"crio-", "cri-o"}, {"libpod-", "podman"},
	} {
		if rest, ok := strings.CutPrefix(base, p.prefix); ok && isHexID(rest) {
			return p.runtime, rest, true
		}
	}
	return "", "", false
}

func isUnit(c string) bool {
	for _, s := range []string{".service", ".scope", ".slice", ".socket", ".mount", ".swap"} {
		if strings.HasSuffix(c, s) && len(c) > len(s) {
			return true
		}
	}
	return false
}

// isHexID: a container id, 64 hex digits (Docker, containerd, CRI-O).
func isHexID(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}

// isUID: a pod UID, 8-4-4-4-12 hex digits with dashes (or underscores,
// as the systemd driver writes them).
func isUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != '-' && s[i] != '_' {
				return false
			}
		default:
			if !isHex(s[i]) {
				return false
			}
		}
	}
	return true
}

func isHex(b byte) bool { return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' }

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
