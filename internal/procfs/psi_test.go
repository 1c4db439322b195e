package procfs

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPressure(t *testing.T) {
	t.Parallel()
	fsys := hostFS()
	mem, err := fsys.PressureMemory()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(mem, PSI{HasFull: true}); diff != "" {
		t.Errorf("PressureMemory mismatch (-got +want):\n%s", diff)
	}
	tests := []struct {
		file string
		want PSI
	}{
		{"proc/pressure/cpu", PSI{Some: PSILine{Avg10: 0.10, Avg60: 2.42, Avg300: 2.04, TotalMicros: 11831114}, HasFull: true}},
		{"proc/pressure/io", PSI{Some: PSILine{Avg60: 0.09, Avg300: 0.40, TotalMicros: 3799879},
			Full: PSILine{Avg60: 0.06, Avg300: 0.35, TotalMicros: 3502948}, HasFull: true}},
		{"sys/fs/cgroup/unified/memory.pressure", PSI{HasFull: true}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			data, err := fsys.ReadFile(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParsePSI(data, tt.file)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("ParsePSI mismatch (-got +want):\n%s", diff)
			}
		})
	}
}

func TestParsePSI(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want PSI
	}{
		{"cpu before 5.13: no full line", "some avg10=1.50 avg60=0.25 avg300=100.00 total=42\n",
			PSI{Some: PSILine{Avg10: 1.5, Avg60: 0.25, Avg300: 100, TotalMicros: 42}}},
		{"unknown line and key skipped", "some avg10=0.00 avg60=0.00 avg300=0.00 total=1 avg900=3.00\nnew x=1\n",
			PSI{Some: PSILine{TotalMicros: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParsePSI([]byte(tt.in), "proc/pressure/cpu")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("ParsePSI mismatch (-got +want):\n%s", diff)
			}
		})
	}
}

func TestParsePSIErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		line int
	}{
		{"empty", "", 0},
		{"only full", "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", 0},
		{"missing total", "some avg10=0.00 avg60=0.00 avg300=0.00\n", 1},
		{"truncated", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 av", 2},
		{"bad number", "some avg10=x avg60=0.00 avg300=0.00 total=0\n", 1},
		{"NaN", "some avg10=NaN avg60=0.00 avg300=0.00 total=0\n", 1},
		{"negative", "some avg10=-1 avg60=0.00 avg300=0.00 total=0\n", 1},
		{"bad total", "some avg10=0 avg60=0.00 avg300=0.00 total=1.5\n", 1},
		{"garbage", "hello world\n", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParsePSI([]byte(tt.in), "proc/pressure/memory")
			wantParseError(t, err, "proc/pressure/memory", tt.line)
		})
	}
}

func FuzzParsePSI(f *testing.F) {
	addHostile(f, "proc/pressure/memory")
	for _, name := range []string{"host/proc/pressure/memory", "host/proc/pressure/cpu", "host/proc/pressure/io"} {
		f.Add(readTestdata(f, name))
	}
	f.Add([]byte("some avg10=1e2 avg60=0x1p-2 avg300=0.00 total=18446744073709551615\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		psi, err := ParsePSI(data, "proc/pressure/memory")
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		for _, l := range []PSILine{psi.Some, psi.Full} {
			for _, v := range []float64{l.Avg10, l.Avg60, l.Avg300} {
				if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
					t.Fatalf("impossible average %v", v)
				}
			}
		}
		if !psi.HasFull && psi.Full != (PSILine{}) {
			t.Fatalf("full values without a full line: %+v", psi)
		}
	})
}
