package model_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/cgroups"
	"github.com/memdoctor/memdoctor/internal/model"
)

// TestCgroupOwnerIsCgroupsIdentity: who a cgroup belongs to is one type,
// filled by cgroups from a path and written in the report as it is: a
// Kubernetes container's identity goes into a report's owner without a
// copy, its keys in the report's order.
func TestCgroupOwnerIsCgroupsIdentity(t *testing.T) {
	t.Parallel()
	const id = "9a8b7c6d5e4f30211203f4e5d6c7b8a99a8b7c6d5e4f30211203f4e5d6c7b8a9"
	p := "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod3b7e1c2a_94d0_4f8e_a1b2_6c5d4e3f2a1b.slice/cri-containerd-" + id + ".scope"
	named := cgroups.Name(p)
	u := model.CgroupUse{Cgroup: p, Owner: &named}
	b, err := json.Marshal(u.Owner)
	if err != nil {
		t.Fatal(err)
	}
	last := -1
	for _, k := range []string{"kind", "name", "runtime", "container_id", "pod_uid", "qos", "unit"} {
		i := strings.Index(string(b), `"`+k+`":`)
		if i <= last {
			t.Errorf("owner %s: %q missing or out of the report's order", b, k)
		}
		last = i
	}
	if u.Owner.Kind != "kubernetes" || u.Owner.ContainerID != id || u.Owner.QoS != "burstable" || u.Owner.Runtime != "containerd" {
		t.Errorf("owner %+v", u.Owner)
	}
}
