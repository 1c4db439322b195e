package diagnose

import "testing"

// TestContainerMatch: --match's matchers on job and instance name the
// node's exporters and are left out of container selectors; the others
// stay, quotes and commas in values included.
func TestContainerMatch(t *testing.T) {
	for in, want := range map[string]string{
		``:                                    ``,
		`{job="node"}`:                        ``,
		`{instance="host-1:9100",job="node"}`: ``,
		`{dc="ams",job=~"node|kubelet"}`:      `{dc="ams"}`,
		`{cluster="a,b",instance!="x"}`:       `{cluster="a,b"}`,
		`{note="say \"job=1\"",instance="h"}`: `{note="say \"job=1\""}`,
		`{jobname="x"}`:                       `{jobname="x"}`,
		`{env="prod", team=~"db.*"}`:          `{env="prod",team=~"db.*"}`,
	} {
		if got := ContainerMatch(in); got != want {
			t.Errorf("ContainerMatch(%s) = %s; want %s", in, got, want)
		}
	}
}
