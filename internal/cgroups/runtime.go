package cgroups

// Runtime names: what the container runtimes and the kubelet keep on the
// host says what a pod UID or a container id is called. Every file here is
// written from what a container's owner chose (names, environment), and
// memdoctor reads it as root, so each read is bounded and hostile input is
// expected:
//
//	/var/log/pods/<namespace>_<pod>_<uid>/        the kubelet's pod log
//	                                              directories: one listing
//	                                              names every pod by UID
//	/var/log/containers/<pod>_<namespace>_<container>-<id>.log
//	                                              links to the container's
//	                                              log: their names alone
//	                                              (never followed) name every
//	                                              container by id
//	/var/lib/docker/containers/<id>/config.v2.json  Docker's: only the
//	                                              top-level "Name" is decoded
//	                                              (the rest, the container's
//	                                              environment among it, is
//	                                              skipped and never kept)
//	/var/lib/containers/storage/overlay-containers/containers.json
//	                                              Podman's (containers/
//	                                              storage): ids and names
//
// Paths are read below a root (the live host's "/", or --root), one
// component at a time without following a symbolic link; a name that is
// not what Kubernetes, Docker or Podman accept (terminal escapes, other
// bytes, too long) is dropped. Listings are cached by the directory's
// identity and modification time, Docker's names by the file's, across
// the collections of one Runtime.

import (
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/memdoctor/memdoctor/internal/safeio"
)

// Bounds of what one Runtime reads.
const (
	// maxListed bounds the entries of one listing (pods, containers).
	maxListed = 100000
	// maxConfig bounds what is read of one Docker config.v2.json.
	maxConfig = 1 << 20
	// maxPodmanStore bounds what is read of Podman's containers.json.
	maxPodmanStore = 16 << 20
	// maxConfigReads bounds the Docker configs decoded a generation
	// (cached ones are free).
	maxConfigReads = 1000
)

// Runtime paths, relative to the root.
const (
	podLogDir       = "var/log/pods"
	containerLogDir = "var/log/containers"
	dockerDir       = "var/lib/docker/containers"
	podmanStore     = "var/lib/containers/storage/overlay-containers/containers.json"
)

// Runtime names cgroups' owners from the runtimes' state below Root. The
// zero value, or a nil one, names nothing. Not safe for concurrent use.
type Runtime struct {
	// Root is the directory the runtime paths are read below ("/" for
	// the live host); "" reads nothing.
	Root string

	gen    int // the generation; each Begin starts one
	pods   listing[podRef]
	ctrs   listing[ctrRef]
	podman listing[string]
	docker map[string]dockerName
	reads  int // configs decoded this generation
}

type podRef struct{ ns, pod string }
type ctrRef struct{ ns, pod, ctr string }

type dockerName struct {
	id   safeio.FileID
	name string
}

// listing is one directory's (or file's) names by id, with the version
// they were read from and the generation they were last checked in.
type listing[T any] struct {
	id      safeio.FileID
	checked int
	read    bool
	byID    map[string]T
}

// NewRuntime returns a Runtime reading below root ("" reads nothing).
func NewRuntime(root string) *Runtime { return &Runtime{Root: root} }

// Begin starts a generation (a collection): the state is checked for
// changes again, once, when first needed.
func (r *Runtime) Begin() {
	if r != nil {
		r.gen++
		r.reads = 0
	}
}

// Name names the cgroup at p (see the function Name), then its owner from
// the runtimes' state.
func (r *Runtime) Name(p string) Identity { return r.Resolve(Name(p)) }

// Resolve adds the runtimes' names to what a path said.
func (r *Runtime) Resolve(id Identity) Identity {
	if r == nil || r.Root == "" {
		return id
	}
	if r.gen == 0 {
		r.gen = 1
	}
	switch {
	case id.Kind == "kubernetes" && (id.PodUID != "" || id.ContainerID != ""):
		if id.PodUID != "" {
			if p, ok := r.podNames()[id.PodUID]; ok {
				id.Namespace, id.Pod = p.ns, p.pod
			}
		}
		if id.ContainerID != "" {
			if c, ok := r.containerNames()[id.ContainerID]; ok {
				if id.Pod == "" {
					id.Namespace, id.Pod = c.ns, c.pod
				}
				if id.Namespace == c.ns && id.Pod == c.pod {
					id.Container = c.ctr
				}
			}
		}
	case id.Runtime == "docker" && id.ContainerID != "":
		id.Container = r.dockerName(id.ContainerID)
	case id.Runtime == "podman" && id.ContainerID != "":
		id.Container = r.podmanNames()[id.ContainerID]
	default:
		return id
	}
	id.Name = displayName(id)
	return id
}

// displayName: namespace/pod/container for a Kubernetes container,
// namespace/pod for a pod (the form the Prometheus source names cadvisor's
// containers by), a Docker or Podman container's own name.
func displayName(id Identity) string {
	switch {
	case id.Pod != "":
		n := id.Namespace + "/" + id.Pod
		switch {
		case id.Container != "":
			n += "/" + id.Container
		case id.ContainerID != "":
			rt := id.Runtime
			if rt == "" {
				rt = "container"
			}
			n += " " + rt + " " + short(id.ContainerID)
		}
		return n
	case id.Container != "":
		return id.Container
	}
	return id.Name
}

func (r *Runtime) podNames() map[string]podRef {
	refresh(r, &r.pods, func() (map[string]podRef, safeio.FileID, error) {
		ents, fid, err := safeio.ListBeneath(r.Root, podLogDir, maxListed)
		if err != nil {
			return nil, fid, err
		}
		m := make(map[string]podRef, len(ents))
		for _, e := range ents {
			if e.Type != safeio.TypeDir && e.Type != safeio.TypeUnknown {
				continue
			}
			if ns, pod, uid, ok := ParsePodLogDir(e.Name); ok {
				m[uid] = podRef{ns, pod}
			}
		}
		return m, fid, nil
	}, func() (safeio.FileID, error) { return safeio.StatBeneath(r.Root, podLogDir) })
	return r.pods.byID
}

func (r *Runtime) containerNames() map[string]ctrRef {
	refresh(r, &r.ctrs, func() (map[string]ctrRef, safeio.FileID, error) {
		ents, fid, err := safeio.ListBeneath(r.Root, containerLogDir, maxListed)
		if err != nil {
			return nil, fid, err
		}
		m := make(map[string]ctrRef, len(ents))
		for _, e := range ents {
			if pod, ns, ctr, id, ok := ParseContainerLog(e.Name); ok {
				m[id] = ctrRef{ns, pod, ctr}
			}
		}
		return m, fid, nil
	}, func() (safeio.FileID, error) { return safeio.StatBeneath(r.Root, containerLogDir) })
	return r.ctrs.byID
}

func (r *Runtime) podmanNames() map[string]string {
	refresh(r, &r.podman, func() (map[string]string, safeio.FileID, error) {
		f, fid, err := safeio.OpenBeneath(r.Root, podmanStore)
		if err != nil {
			return nil, fid, err
		}
		defer func() { _ = f.Close() }() // read-only
		return PodmanNames(io.LimitReader(f, maxPodmanStore)), fid, nil
	}, func() (safeio.FileID, error) {
		f, fid, err := safeio.OpenBeneath(r.Root, podmanStore)
		if err == nil {
			_ = f.Close() // read-only
		}
		return fid, err
	})
	return r.podman.byID
}

// refresh re-reads a listing when its directory (or file) changed since
// it was read, checking once a generation. A missing or unreadable one
// names nothing.
func refresh[T any](r *Runtime, l *listing[T], read func() (map[string]T, safeio.FileID, error), stat func() (safeio.FileID, error)) {
	if l.checked == r.gen {
		return
	}
	l.checked = r.gen
	if l.read {
		if fid, err := stat(); err == nil && fid == l.id {
			return
		}
	}
	m, fid, err := read()
	if err != nil {
		l.byID, l.id, l.read = nil, safeio.FileID{}, false
		return
	}
	l.byID, l.id, l.read = m, fid, true
}

func (r *Runtime) dockerName(id string) string {
	if !isHexID(id) {
		return ""
	}
	f, fid, err := safeio.OpenBeneath(r.Root, dockerDir+"/"+id+"/config.v2.json")
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }() // read-only
	if c, ok := r.docker[id]; ok && c.id == fid {
		return c.name
	}
	if r.reads >= maxConfigReads {
		return ""
	}
	r.reads++
	name := DockerConfigName(io.LimitReader(f, maxConfig))
	if r.docker == nil {
		r.docker = map[string]dockerName{}
	}
	r.docker[id] = dockerName{fid, name}
	return name
}

// ParsePodLogDir splits the name of a kubelet pod log directory,
// <namespace>_<pod>_<uid>, refusing names Kubernetes would not give.
func ParsePodLogDir(s string) (ns, pod, uid string, ok bool) {
	parts := strings.Split(s, "_")
	if len(parts) != 3 || !isDNSLabel(parts[0]) || !isDNSSubdomain(parts[1]) || !isUID(parts[2]) || strings.Contains(parts[2], "_") {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// ParseContainerLog splits the name of a kubelet container log link,
// <pod>_<namespace>_<container>-<id>.log, refusing names Kubernetes would
// not give.
func ParseContainerLog(s string) (pod, ns, ctr, id string, ok bool) {
	base, ok := strings.CutSuffix(s, ".log")
	if !ok || len(base) < 66 || base[len(base)-65] != '-' || !isHexID(base[len(base)-64:]) {
		return "", "", "", "", false
	}
	parts := strings.Split(base[:len(base)-65], "_")
	if len(parts) != 3 || !isDNSSubdomain(parts[0]) || !isDNSLabel(parts[1]) || !isDNSLabel(parts[2]) {
		return "", "", "", "", false
	}
	return parts[0], parts[1], parts[2], base[len(base)-64:], true
}

// DockerConfigName decodes the top-level "Name" of a Docker
// config.v2.json from r, token by token: every other value is skipped and
// nothing of it kept, and the reading stops at the name (so malformed JSON
// after it does not matter; before it, or past the reader's cap, there is
// no name). A name Docker would not accept, or none, is "".
func DockerConfigName(r io.Reader) string {
	d := json.NewDecoder(r)
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return ""
		}
		if k == "Name" {
			var v any
			if v, err = d.Token(); err != nil {
				return ""
			}
			s, _ := v.(string)
			s = strings.TrimPrefix(s, "/")
			if !isContainerName(s) {
				return ""
			}
			return s
		}
		if skipValue(d) != nil {
			return ""
		}
	}
	return ""
}

// skipValue reads past one JSON value.
func skipValue(d *json.Decoder) error {
	depth := 0
	for {
		t, err := d.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// PodmanNames decodes containers/storage's containers.json from r: the
// first name of each container by its id. What decodes before an error
// (or the size cap) is kept; a name Podman would not accept is dropped.
func PodmanNames(r io.Reader) map[string]string {
	m := map[string]string{}
	d := json.NewDecoder(r)
	if t, err := d.Token(); err != nil || t != json.Delim('[') {
		return m
	}
	for d.More() {
		var c struct {
			ID    string   `json:"id"`
			Names []string `json:"names"`
		}
		if err := d.Decode(&c); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				continue // the element was read past
			}
			return m
		}
		if isHexID(c.ID) && len(c.Names) > 0 && isContainerName(c.Names[0]) {
			m[c.ID] = c.Names[0]
		}
	}
	return m
}

// isDNSLabel: a Kubernetes namespace or container name (RFC 1123 label).
func isDNSLabel(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// isDNSSubdomain: a Kubernetes pod name (RFC 1123 subdomain).
func isDNSSubdomain(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if !isDNSLabel(l) {
			return false
		}
	}
	return true
}

// isContainerName: a Docker or Podman container name,
// [a-zA-Z0-9][a-zA-Z0-9_.-]*, at most 253 bytes here.
func isContainerName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || (c != '_' && c != '.' && c != '-')) {
			return false
		}
	}
	return true
}
