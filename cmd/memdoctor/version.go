package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Set at build time by the Makefile:
//
//	-ldflags "-X main.version=... -X main.commit=... -X main.buildDate=..."
//
// A plain `go build` leaves them empty; buildInfo then takes what the Go
// toolchain recorded (module version, VCS revision and commit time).
var (
	version   = ""
	commit    = ""
	buildDate = ""
)

// provenance says what this binary is and where it came from.
type provenance struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Modified  bool   `json:"modified,omitempty"` // built from a work tree with changes
	GoVersion string `json:"goVersion"`
	BuildDate string `json:"buildDate"`
	Platform  string `json:"platform"`
}

// buildInfo is this binary's provenance.
func buildInfo() provenance {
	bi, _ := debug.ReadBuildInfo()
	return mergeProvenance(provenance{Version: version, Commit: commit, BuildDate: buildDate}, bi)
}

// mergeProvenance fills what the link-time values in p leave empty from the
// toolchain's build information bi (nil: none); the link-time values win.
func mergeProvenance(p provenance, bi *debug.BuildInfo) provenance {
	p.GoVersion, p.Platform = runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH
	linkCommit := p.Commit
	if bi != nil {
		if p.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			p.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if p.Commit == "" {
					p.Commit = s.Value
				}
			case "vcs.time":
				// Not the build date, but the nearest thing a plain
				// `go build` records; labelled as such below.
				if p.BuildDate == "" {
					p.BuildDate = "commit " + s.Value
				}
			case "vcs.modified":
				p.Modified = s.Value == "true" && linkCommit == ""
			}
		}
	}
	if p.Version == "" {
		p.Version = "dev"
	}
	if p.Commit == "" {
		p.Commit = "unknown"
	}
	if p.BuildDate == "" {
		p.BuildDate = "unknown"
	}
	return p
}

// String is the line `memdoctor version` and `memdoctor --version` print.
func (p provenance) String() string {
	c := p.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	if p.Modified {
		c += "-modified"
	}
	return fmt.Sprintf("memdoctor %s (commit %s, %s, %s, built %s)", p.Version, c, p.GoVersion, p.Platform, p.BuildDate)
}

func newVersionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, Go version and build date",
		Long: `version prints what this binary is: its version, the commit it was built
from (with -modified when the work tree had changes), the Go version and
platform, and the build date. --version prints the same line.`,
		Example: `  memdoctor version
  memdoctor version --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p := buildInfo()
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), p)
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), p)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON object")
	return cmd
}
