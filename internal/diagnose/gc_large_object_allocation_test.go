package diagnose

import (
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/model"
)

// The heap hard limit advised to a .NET process follows its memory
// cgroup: the cgroup's limit named when it has one, no container advice
// when it has none, the generic advice when the cgroup is not known.
func TestLargeRemediesCgroupLimit(t *testing.T) {
	budget := func(cg string, limit *int64) model.Remedy {
		t.Helper()
		rs := largeRemedies(&model.Runtime{Runtime: "dotnet", Version: "3.1.23", Cgroup: cg, CgroupLimitBytes: limit})
		return rs[2]
	}
	l := int64(512 << 20)
	b := budget("/shop/web", &l)
	if !strings.Contains(b.Title, "its memory cgroup /shop/web is limited to 512 MiB: set a heap hard limit") ||
		!strings.Contains(strings.Join(b.Commands, "\n"), "COMPlus_GCHeapHardLimitPercent=0x4B <command>   # 75% of 512 MiB (hex)") {
		t.Errorf("limited: %+v", b)
	}
	if b := budget("/shop/\x1b[2J", &l); strings.Contains(b.Title, "\x1b") || !strings.Contains(b.Title, "its memory cgroup is limited to 512 MiB") {
		t.Errorf("an unprintable cgroup name: %q", b.Title)
	}
	if b := budget("/system.slice/web.service", nil); strings.Contains(b.Title, "container") || strings.Contains(strings.Join(b.Commands, "\n"), "GCHeapHardLimitPercent") {
		t.Errorf("no limit: %+v", b)
	}
	if b := budget("", nil); !strings.Contains(b.Title, "in a container set a heap hard limit") {
		t.Errorf("cgroup unknown: %+v", b)
	}
}
