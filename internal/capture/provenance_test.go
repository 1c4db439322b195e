package capture

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestProvenanceRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		prov Provenance
		text string
	}{
		{
			name: "zero",
			text: "memdoctor capture v1\nredacted: false\n",
		},
		{
			name: "full",
			prov: Provenance{
				Kernel:     "6.8.0-45-generic",
				Arch:       "amd64",
				PageSize:   65536,
				CgroupMode: "hybrid",
				Time:       time.Date(2025, 1, 2, 3, 4, 5, 600, time.UTC),
				Glibc:      "GNU C Library (Ubuntu GLIBC 2.39-0ubuntu8) stable release version 2.39.",
				Redacted:   true,
				Tool:       "memdoctor 0.1.0",
				Note:       "prod-db-3 after OOM",
				Extra:      map[string]string{"host": "db3", "x.empty": "", "zone_id": "eu-1"},
			},
			text: "memdoctor capture v1\n" +
				"kernel: 6.8.0-45-generic\n" +
				"arch: amd64\n" +
				"pagesize: 65536\n" +
				"cgroup: hybrid\n" +
				"time: 2025-01-02T03:04:05.0000006Z\n" +
				"glibc: GNU C Library (Ubuntu GLIBC 2.39-0ubuntu8) stable release version 2.39.\n" +
				"redacted: true\n" +
				"tool: memdoctor 0.1.0\n" +
				"note: prod-db-3 after OOM\n" +
				"host: db3\n" +
				"x.empty:\n" +
				"zone_id: eu-1\n",
		},
		{
			name: "quoted values",
			prov: Provenance{
				Note:  "two\nlines\tand a tab",
				Tool:  " padded ",
				Glibc: `"starts with a quote`,
				Extra: map[string]string{"bin": "\xff\x00"},
			},
			text: "memdoctor capture v1\n" +
				`glibc: "\"starts with a quote"` + "\n" +
				"redacted: false\n" +
				`tool: " padded "` + "\n" +
				`note: "two\nlines\tand a tab"` + "\n" +
				`bin: "\xff\x00"` + "\n",
		},
		{
			name: "time in another zone is written in UTC",
			prov: Provenance{Time: time.Date(2025, 6, 1, 12, 0, 0, 0, time.FixedZone("CEST", 2*3600))},
			text: "memdoctor capture v1\ntime: 2025-06-01T10:00:00Z\nredacted: false\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.prov.MarshalText()
			if err != nil {
				t.Fatalf("MarshalText: %v", err)
			}
			if diff := cmp.Diff(string(got), tt.text); diff != "" {
				t.Errorf("MarshalText mismatch (-got +want):\n%s", diff)
			}
			back, err := ParseProvenance(got)
			if err != nil {
				t.Fatalf("ParseProvenance: %v", err)
			}
			if diff := cmp.Diff(back, tt.prov, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("round trip mismatch (-got +want):\n%s", diff)
			}
		})
	}
}

func TestParseProvenanceTolerant(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		want Provenance
	}{
		{
			name: "unknown keys, comments, blank lines, CRLF, no final newline",
			text: "memdoctor capture v1\r\n# hand-written\r\n\r\nkernel:5.15.0\r\nfuture-key: some value\r\npagesize: 4096",
			want: Provenance{Kernel: "5.15.0", PageSize: 4096, Extra: map[string]string{"future-key": "some value"}},
		},
		{
			name: "magic only",
			text: "memdoctor capture v1",
			want: Provenance{},
		},
		{
			name: "time with offset is converted to UTC",
			text: "memdoctor capture v1\ntime: 2025-06-01T12:00:00+02:00\n",
			want: Provenance{Time: time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseProvenance([]byte(tt.text))
			if err != nil {
				t.Fatalf("ParseProvenance: %v", err)
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("mismatch (-got +want):\n%s", diff)
			}
			if got.Time.Location() != time.UTC {
				t.Errorf("Time location = %v, want UTC", got.Time.Location())
			}
		})
	}
}

func TestParseProvenanceErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		text    string
		wantErr error
		wantMsg string
	}{
		{"empty", "", ErrNotCapture, `line 1: not a memdoctor capture: first line is ""`},
		{"other file", "MemTotal: 1 kB\n", ErrNotCapture, `line 1: not a memdoctor capture: first line is "MemTotal: 1 kB"`},
		{"newer version", "memdoctor capture v2\n", ErrNotCapture, `line 1: unsupported capture format "memdoctor capture v2"`},
		{"txtar without comment", "-- proc/meminfo --\n", ErrNotCapture, "line 1: not a memdoctor capture"},
		{"no colon", "memdoctor capture v1\nkernel 6.1\n", ErrCorrupt, `line 2: malformed provenance line "kernel 6.1"`},
		{"bad key", "memdoctor capture v1\nkernel: 6.1\nbad key: x\n", ErrCorrupt, "line 3: malformed provenance line"},
		{"duplicate", "memdoctor capture v1\narch: amd64\narch: arm64\n", ErrCorrupt, `line 3: duplicate provenance key "arch"`},
		{"page size", "memdoctor capture v1\npagesize: 4k\n", ErrCorrupt, `line 2: provenance key "pagesize": "4k" is not a page size`},
		{"negative page size", "memdoctor capture v1\npagesize: -1\n", ErrCorrupt, "line 2: provenance key \"pagesize\""},
		{"time", "memdoctor capture v1\n\ntime: yesterday\n", ErrCorrupt, `line 3: provenance key "time": "yesterday" is not an RFC 3339 time`},
		{"redacted", "memdoctor capture v1\nredacted: maybe\n", ErrCorrupt, `line 2: provenance key "redacted": "maybe" is not true or false`},
		{"bad quote", "memdoctor capture v1\nnote: \"unterminated\n", ErrCorrupt, `line 2: provenance key "note": bad quoted value`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseProvenance([]byte(tt.text))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ParseProvenance error = %v, want errors.Is %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("ParseProvenance error = %q, want it to contain %q", err, tt.wantMsg)
			}
		})
	}
}

func TestMarshalTextErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		extra map[string]string
		want  string
	}{
		{"key with blank", map[string]string{"a b": "x"}, `malformed extra key "a b"`},
		{"key with colon", map[string]string{"a:b": "x"}, "malformed extra key"},
		{"empty key", map[string]string{"": "x"}, "malformed extra key"},
		{"field key", map[string]string{"kernel": "x"}, `extra key "kernel" is a field's key`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Provenance{Extra: tt.extra}.MarshalText()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("MarshalText error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}
