package collect

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// check reads only CheckSysctls of /proc/sys/vm: every vm sysctl series
// the module's code asks for by name (the model, the rules, anything but
// this package's collector) must be one of them, or check would judge
// without it.
func TestCheckSysctlsAreThoseRead(t *testing.T) {
	re := regexp.MustCompile(`node_sysctl_vm_([a-z0-9_]+)`)
	var used []string
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || strings.HasPrefix(p, filepath.Join("..", "collect")+string(filepath.Separator)) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			if !slices.Contains(CheckSysctls, m[1]) {
				t.Errorf("%s asks for node_sysctl_vm_%s, which check does not read (add %q to CheckSysctls)", p, m[1], m[1])
			}
			used = append(used, m[1])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range CheckSysctls {
		if !slices.Contains(used, n) {
			t.Errorf("check reads vm.%s, which nothing asks for", n)
		}
	}
}
