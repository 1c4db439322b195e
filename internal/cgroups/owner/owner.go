// Package owner declares who a cgroup belongs to, the one type the
// cgroups package fills from a path and the runtimes' state and the
// report's JSON schema (model) carries: a leaf, so that the schema and the
// rules get the type without the package that reads the host.
package owner

// Owner is what a cgroup path says about its owner, and the names the
// runtimes' state on the host gives (namespace, pod, container). Its
// fields are in the order of the report's JSON.
type Owner struct {
	// Kind: "kubernetes", "container", "systemd" or "" (a plain directory).
	Kind string `json:"kind,omitempty"`
	// Name is a short display name: the unit, "pod <uid>", or
	// "<runtime> <id prefix>"; with the runtimes' names,
	// "namespace/pod/container", "namespace/pod" or a container's name.
	Name string `json:"name,omitempty"`
	// Runtime: docker, containerd, cri-o, podman, when a container's.
	Runtime string `json:"runtime,omitempty"`
	// ContainerID is the runtime's container id (hex).
	ContainerID string `json:"container_id,omitempty"`
	// PodUID and QoS (guaranteed, burstable, besteffort) of a Kubernetes
	// pod or of a container in one.
	PodUID string `json:"pod_uid,omitempty"`
	QoS    string `json:"qos,omitempty"`
	// Unit is the innermost systemd unit (service, scope, slice).
	Unit string `json:"unit,omitempty"`
	// Namespace, Pod and Container are the names the runtimes' state on
	// the host gives; a path alone never has them.
	Namespace string `json:"namespace,omitempty"`
	Pod       string `json:"pod,omitempty"`
	Container string `json:"container,omitempty"`
}
