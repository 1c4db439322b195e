package internal_test

// The package direction of the architecture, checked on every test run (the
// golangci-lint depguard rules say the same for editors):
// procfs <- collect -> sample <- store/source <- diagnose <- report/remedy.

import (
	"errors"
	"go/build"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const mod = "github.com/memdoctor/memdoctor/internal/"

// forbidden lists, per package, the internal packages it must not import.
var forbidden = map[string][]string{
	"procfs":   {"sample", "collect", "diagnose", "report", "remedy", "store", "source"},
	"vmcalc":   {"procfs", "collect", "sample", "diagnose", "report"},
	"sample":   {"procfs", "collect", "diagnose", "report", "remedy", "store", "source"},
	"diagnose": {"procfs", "collect", "report", "remedy"},
	"report":   {"procfs", "collect", "remedy"},
	"remedy":   {"procfs", "collect"},
	"capture":  {"collect", "diagnose", "report", "remedy"},
	// probe measures a live process; lint reads config files into diagnose's
	// Finding shape. Neither depends on the collectors or the stores.
	"probe":    {"collect", "diagnose", "report", "remedy", "store", "source", "sample"},
	"lint":     {"procfs", "collect", "report", "remedy", "store", "source"},
	"runtimes": {"collect", "diagnose", "report", "remedy", "store", "source"},
	// htmlreport renders what diagnose found and the series it was given.
	"htmlreport": {"procfs", "collect", "remedy", "store", "source", "record"},
	// Fleet work reads Prometheus, never this host.
	"prom":     {"procfs", "collect", "sample", "diagnose", "report", "store", "source"},
	"fleet":    {"procfs", "collect", "report", "store", "source"},
	"compare":  {"procfs", "collect", "diagnose", "report"},
	"alerts":   {"procfs", "collect", "report", "prom", "store", "source"},
	"fleetgen": {"procfs", "collect", "diagnose", "report", "store", "source"},
}

func TestPackageDirection(t *testing.T) {
	t.Parallel()
	for pkg, deny := range forbidden {
		dir := filepath.Join(".", pkg)
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		bp, err := build.ImportDir(dir, 0)
		if err != nil {
			var noGo *build.NoGoError
			if errors.As(err, &noGo) {
				continue
			}
			t.Fatalf("%s: %v", pkg, err)
		}
		for _, imp := range bp.Imports {
			if !strings.HasPrefix(imp, mod) {
				continue
			}
			target := strings.SplitN(strings.TrimPrefix(imp, mod), "/", 2)[0]
			for _, d := range deny {
				if target == d {
					t.Errorf("internal/%s imports internal/%s, against the package direction", pkg, d)
				}
			}
		}
	}
}
