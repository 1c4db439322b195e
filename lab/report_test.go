package lab_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/memdoctor/memdoctor/lab"
)

// report is the part of memdoctor's JSON (check, diagnose) the scenarios
// read.
type report struct {
	Host struct {
		Hostname string `json:"hostname"`
		Kernel   string `json:"kernel"`
	} `json:"host"`
	Cgroups struct {
		Mode        string `json:"mode"`
		MemoryDying int64  `json:"memory_dying"`
	} `json:"cgroups"`
	Findings []finding `json:"findings"`
}

type finding struct {
	ID       string `json:"id"`
	Severity string `json:"severity"`
	Subject  string `json:"subject"`
	Summary  string `json:"summary"`
	Evidence []struct {
		Name  string  `json:"name"`
		Value float64 `json:"value"`
		Text  string  `json:"text"`
	} `json:"evidence"`
	Remedies []struct {
		Title    string   `json:"title"`
		Commands []string `json:"commands"`
	} `json:"remedies"`
}

func (r *report) finding(id string) *finding {
	for i := range r.Findings {
		if r.Findings[i].ID == id {
			return &r.Findings[i]
		}
	}
	return nil
}

// about returns the finding of a rule about one subject (nil: none).
func (r *report) about(id, subject string) *finding {
	for i := range r.Findings {
		if r.Findings[i].ID == id && r.Findings[i].Subject == subject {
			return &r.Findings[i]
		}
	}
	return nil
}

func (f *finding) evidence(name string) (float64, bool) {
	for _, e := range f.Evidence {
		if e.Name == name {
			return e.Value, true
		}
	}
	return 0, false
}

func readReport(t *testing.T, res *lab.Result, name string) *report {
	t.Helper()
	var r report
	if err := json.Unmarshal([]byte(res.File(t, name)), &r); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, res.Log)
	}
	return &r
}

// statValue reads one key of a cgroup.stat the guest copied out.
func statValue(t *testing.T, res *lab.Result, name, key string) int64 {
	t.Helper()
	for _, l := range strings.Split(res.File(t, name), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && f[0] == key {
			v, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("%s has no %s", name, key)
	return 0
}

func scenario(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("scenarios/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// saveCaptures copies the guest's capture archives (guest name → name) to
// $MEMDOCTOR_LAB_CAPTURES when it is set: testdata/captures is refreshed
// that way (see its README).
func saveCaptures(t *testing.T, res *lab.Result, names map[string]string) {
	t.Helper()
	dir := os.Getenv("MEMDOCTOR_LAB_CAPTURES")
	for from, to := range names {
		b := res.File(t, from)
		if !strings.HasPrefix(b, "memdoctor capture v1\n") {
			t.Errorf("%s is not a capture archive: %.80q", from, b)
			continue
		}
		if dir == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, to), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// psiTotals reads the some and full totals of /proc/pressure/memory as the
// guest copied it, in seconds (the file counts microseconds).
func psiTotals(t *testing.T, res *lab.Result, name string) (some, full float64) {
	t.Helper()
	found := 0
	for _, l := range strings.Split(res.File(t, name), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		for _, kv := range f[1:] {
			v, ok := strings.CutPrefix(kv, "total=")
			if !ok {
				continue
			}
			us, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", name, l, err)
			}
			switch f[0] {
			case "some":
				some, found = float64(us)/1e6, found+1
			case "full":
				full, found = float64(us)/1e6, found+1
			}
		}
	}
	if found != 2 {
		t.Fatalf("%s: no some and full totals: %q", name, res.File(t, name))
	}
	return some, full
}

// recorderCost reads what a scenario wrote of the recorder's cost while
// it ran (utime+stime and start time from /proc/PID/stat, VmHWM): CPU
// seconds, seconds since it started, peak RSS in bytes.
func recorderCost(t *testing.T, res *lab.Result, name string) (cpu, ran float64, peak int64) {
	t.Helper()
	cost := map[string]float64{}
	for _, l := range strings.Split(res.File(t, name), "\n") {
		f := strings.Fields(strings.ReplaceAll(l, ":", ""))
		if len(f) >= 2 {
			cost[f[0]], _ = strconv.ParseFloat(f[1], 64)
		}
	}
	hz, _ := strconv.ParseFloat(strings.TrimSpace(res.File(t, "clk_tck")), 64)
	if hz <= 0 {
		hz = 100
	}
	return cost["ticks"] / hz, cost["uptime"] - cost["start_ticks"]/hz, int64(cost["VmHWM"]) << 10
}

// slowScenario skips a scenario (40 s or more of emulated guest) in -short
// runs (make test-short); make test runs them.
func slowScenario(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("lab scenario: a booted guest for 40 s or more (make test runs it)")
	}
}
