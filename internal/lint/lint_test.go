package lint

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/memdoctor/memdoctor/internal/model"
)

// TestRuleCases runs every file in testdata/<rule>/: its "# expect:" line
// says warning/info/quiet, "# evidence: name=value" lines name numbers the
// finding must carry.
func TestRuleCases(t *testing.T) {
	t.Parallel()
	dirs, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		files, err := filepath.Glob(filepath.Join("testdata", d.Name(), "*"))
		if err != nil {
			t.Fatal(err)
		}
		fired, quiet := 0, 0
		for _, path := range files {
			expect, evidence := directives(t, path)
			f, err := Load(path, "")
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			var got *model.Finding
			for _, fd := range Lint(f, Options{}) {
				if fd.ID == d.Name() {
					got = &fd
				}
			}
			switch {
			case expect == "quiet" && got != nil:
				t.Errorf("%s: want quiet, got %s: %s", path, got.Severity, got.Summary)
			case expect == "quiet":
				quiet++
			case got == nil:
				t.Errorf("%s: want %s, got nothing", path, expect)
			case string(got.Severity) != expect:
				t.Errorf("%s: severity %s, want %s", path, got.Severity, expect)
			default:
				fired++
				for name, want := range evidence {
					found := false
					for _, e := range got.Evidence {
						if e.Name == name {
							found = true
							if e.Value != want {
								t.Errorf("%s: evidence %s=%g, want %g", path, name, e.Value, want)
							}
						}
					}
					if !found {
						t.Errorf("%s: no evidence %s in %+v", path, name, got.Evidence)
					}
				}
				if len(got.Remedies) == 0 || len(got.Remedies[0].Commands) == 0 {
					t.Errorf("%s: no corrected lines", path)
				}
			}
		}
		if fired == 0 || quiet == 0 {
			t.Errorf("rule %s: %d firing and %d quiet cases; want both", d.Name(), fired, quiet)
		}
	}
}

func directives(t *testing.T, path string) (expect string, evidence map[string]float64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	evidence = map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "# "), ": ")
		if !ok {
			continue
		}
		switch k {
		case "expect":
			expect = v
		case "evidence":
			n, val, _ := strings.Cut(v, "=")
			x, err := strconv.ParseFloat(val, 64)
			if err != nil {
				t.Fatalf("%s: evidence %q", path, v)
			}
			evidence[n] = x
		}
	}
	if expect == "" {
		t.Fatalf("%s: no # expect: line", path)
	}
	return expect, evidence
}

// TestIncidentFinding: the incident's shipper gets the words that explain
// it, and the corrected lines.
func TestIncidentFinding(t *testing.T) {
	t.Parallel()
	f, err := Load("testdata/kafka_producer_batching/log_shipper_batch20.py", "")
	if err != nil {
		t.Fatal(err)
	}
	fs := Lint(f, Options{MessageBytes: 300})
	if len(fs) != 1 {
		t.Fatalf("%d findings", len(fs))
	}
	fd := fs[0]
	for _, want := range []string{"batch_size=20 is in bytes, not messages", "no 300-byte record fits", "linger_ms=0 (kafka-python's default)", "softirq", "memory"} {
		if !strings.Contains(fd.Summary, want) {
			t.Errorf("summary lacks %q: %s", want, fd.Summary)
		}
	}
	if fd.Subject != f.Path+":16" {
		t.Errorf("subject %q, want the batch_size line", fd.Subject)
	}
	cmds := strings.Join(fd.Remedies[0].Commands, "\n")
	for _, want := range []string{"batch_size=65536,", "line 16, was 20", "linger_ms=20,"} {
		if !strings.Contains(cmds, want) {
			t.Errorf("remedy lacks %q:\n%s", want, cmds)
		}
	}
	// Bigger records raise the recommended batch: 16 records of 8 KiB.
	fd = Lint(f, Options{MessageBytes: 8192})[0]
	if cmds := fd.Remedies[0].Commands; !slices.Contains(cmds, "batch_size=131072,") {
		t.Errorf("8 KiB records: %q", cmds)
	}
}

func TestParseProperties(t *testing.T) {
	t.Parallel()
	in := "# comment\n  ! another\n\na=1\nb : two words \nc\\ d=\\u0041\\tx\\\\\ne   spaced\nlong=x,\\\n   y,\\\n\t z\nonly\nesc=back\\\\\nnext=1\r\nwin=2\r\n"
	got, err := ParseProperties([]byte(in), "p")
	if err != nil {
		t.Fatal(err)
	}
	want := []Setting{
		{Key: "a", Value: "1", Line: 4, Literal: true},
		{Key: "b", Value: "two words ", Line: 5, Literal: true},
		{Key: "c d", Value: "A\tx\\", Line: 6, Literal: true},
		{Key: "e", Value: "spaced", Line: 7, Literal: true},
		{Key: "long", Value: "x,y,z", Line: 8, Literal: true},
		{Key: "only", Value: "", Line: 11, Literal: true},
		{Key: "esc", Value: "back\\", Line: 12, Literal: true},
		{Key: "next", Value: "1", Line: 13, Literal: true},
		{Key: "win", Value: "2", Line: 14, Literal: true},
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("(-got +want)\n%s", diff)
	}
	_, err = ParseProperties([]byte("a=1\nb=\\u00zz\n"), "bad.properties")
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 2 || pe.File != "bad.properties" {
		t.Errorf("malformed escape: %v", err)
	}
}

func TestParsePython(t *testing.T) {
	t.Parallel()
	src := `
p = KafkaProducer(batch_size=16_384, linger_ms=0.5,
                  acks="all")  # batch_size=1 in a comment
s = "batch_size=3"
conf = {'batch_size': 1 << 16, "linger_ms": 2 * 250 + 10, 'buffer_memory': BUF}
q = f(x, batch_size = size)
`
	got := ParsePython([]byte(src))
	want := []Setting{
		{Key: "batch_size", Value: "16384", Line: 2, Literal: true},
		{Key: "linger_ms", Value: "0.5", Line: 2, Literal: true},
		{Key: "acks", Value: "all", Line: 3, Literal: true},
		{Key: "batch_size", Value: "65536", Line: 5, Literal: true, DictQuote: "'"},
		{Key: "linger_ms", Value: "510", Line: 5, Literal: true, DictQuote: `"`},
		{Key: "buffer_memory", Value: "BUF", Line: 5, Literal: false, DictQuote: "'"},
		{Key: "batch_size", Value: "size", Line: 6, Literal: false},
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("(-got +want)\n%s", diff)
	}
}

func TestDetectFormat(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]Format{
		"testdata/kafka_producer_batching/rdkafka_defaults.conf":                Librdkafka,
		"testdata/kafka_producer_batching/producer_default_batching.properties": Java,
		"testdata/kafka_producer_batching/log_shipper_fixed.py":                 Python,
	} {
		f, err := Load(path, "")
		if err != nil {
			t.Fatal(err)
		}
		if f.Format != want {
			t.Errorf("%s: %s, want %s", path, f.Format, want)
		}
	}
	if _, err := Parse("x", nil, "yaml"); err == nil {
		t.Error("unknown format accepted")
	}
}

func FuzzParseProperties(f *testing.F) {
	for _, p := range mustGlob(f, "testdata/*/*.properties", "testdata/*/*.conf", "../../testdata/hostile/lint/*.properties", "../../testdata/hostile/lint/*.conf") {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("a=\\u12"))
	f.Add([]byte("k\\\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseProperties(data, "fuzz")
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error of type %T", err)
			}
			return
		}
		file := &File{Path: "fuzz", Format: Java, Settings: s}
		for _, fd := range Lint(file, Options{}) {
			if fd.ID != RuleKafkaProducerBatching || fd.Summary == "" || len(fd.Remedies) == 0 {
				t.Fatalf("malformed finding %+v", fd)
			}
		}
	})
}

func FuzzParsePython(f *testing.F) {
	for _, p := range mustGlob(f, "testdata/*/*.py", "../../testdata/hostile/lint/*.py") {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`KafkaProducer(batch_size=1 << 99, linger_ms=1e400)`))
	f.Add([]byte(`{'batch_size': """x`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := ParsePython(data)
		lines := bytes.Count(data, []byte("\n")) + 1
		for _, x := range s {
			if x.Line < 1 || x.Line > lines {
				t.Fatalf("line %d of %d", x.Line, lines)
			}
		}
		Lint(&File{Path: "fuzz.py", Format: Python, Settings: s, Sends: 1}, Options{})
	})
}

func mustGlob(f *testing.F, patterns ...string) []string {
	var out []string
	for _, p := range patterns {
		m, err := filepath.Glob(p)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, m...)
	}
	return out
}
