package text

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/internal/rightsize"
)

// A pod or container named to break out of the command (quotes, command
// substitution, a newline, a leading dash) stays one word of the shell:
// the patch printed runs, as sh parses it, kubectl with exactly these
// arguments.
func TestRightsizePatchQuotesHostileNames(t *testing.T) {
	pod, ns, ctr := `web'$(touch /tmp/x)`, "shop;rm -rf /", "c\"1\n2"
	rep := &rightsize.Report{Items: []rightsize.Recommendation{{Name: "x", Namespace: ns, Pod: pod, Container: ctr, RequestBytes: 100 << 20, LimitBytes: 200 << 20},
		{Name: "-dash", Namespace: "ns", Pod: "-n", Container: "c", RequestBytes: 1 << 20, LimitBytes: 2 << 20}}}
	var b bytes.Buffer
	if err := RightsizePatch(&b, rep); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want one command per pod, got:\n%s", b.String())
	}
	// sh prints each argument on a line of its own, NUL-free.
	out, err := exec.Command("/bin/sh", "-c", "kubectl() { for a; do printf '%s\\0' \"$a\"; done; }; "+lines[0]).Output()
	if err != nil {
		t.Fatalf("%s: %v", lines[0], err)
	}
	args := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	want := []string{"patch", "pod", pod, "-n", ns, "--subresource", "resize", "--patch"}
	if len(args) != len(want)+1 {
		t.Fatalf("%s: sh split it into %q", lines[0], args)
	}
	for i, w := range want {
		if args[i] != w {
			t.Errorf("argument %d = %q, want %q", i, args[i], w)
		}
	}
	if !strings.Contains(args[len(want)], `"name":"c\"1\n2"`) || !strings.Contains(args[len(want)], `"memory":"200Mi"`) {
		t.Errorf("patch %s: want the container's exact name and its limit", args[len(want)])
	}
	// A name that could be read as an option is not printed as one.
	if strings.Contains(lines[1], "pod -n ") {
		t.Errorf("a pod named -n is printed as an option: %s", lines[1])
	}
}
