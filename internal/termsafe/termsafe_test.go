package termsafe

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, want, text string }{
		{"java", "java", "java"},
		{"naïve 日本", "naïve 日本", "naïve 日本"},
		{"\x1b[2J", `\x1b[2J`, `\x1b[2J`},
		{"a\nb\tc\rd", `a\nb\tc\rd`, "a\nb\tc\\rd"},
		{"\x00\x07\x7f", `\x00\x07\x7f`, `\x00\x07\x7f`},
		{"\u009b31m\u0085", `\u009b31m\u0085`, `\u009b31m\u0085`},
		{"bad\xff\xc2", `bad\xff\xc2`, `bad\xff\xc2`},
		{"\x1b]0;title\x07", `\x1b]0;title\x07`, `\x1b]0;title\x07`},
		// A direction override would print "job-gnp" as "job-png" reversed:
		// the rest of the line reads backwards.
		{"job\u202egnp.sh", `job\u202egnp.sh`, `job\u202egnp.sh`},
		{"\u2066a\u2069\u200f\u061c", `\u2066a\u2069\u200f\u061c`, `\u2066a\u2069\u200f\u061c`},
		{"quote \u201c ok \u2014 \u2070", "quote \u201c ok \u2014 \u2070", "quote \u201c ok \u2014 \u2070"},
	} {
		if got := Escape(c.in); got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := Text(c.in); got != c.text {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.text)
		}
	}
}

func TestArgsKeepTrusted(t *testing.T) {
	type labelValue string
	got := Args([]any{Trusted("\x1b[1mX\x1b[0m"), "\x1b[1m", 3, labelValue("a\x1b"), []string{"\x07"}})
	if got[0] != "\x1b[1mX\x1b[0m" || got[1] != `\x1b[1m` || got[2] != 3 || got[3] != `a\x1b` || got[4].([]string)[0] != `\x07` {
		t.Errorf("Args = %q", got)
	}
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{"\x1b[2J\u009b31m\r\tev\x7f", "db\x1b]0;pwned\x07\u009b1", "\xff\xfe", "ok", "a\u202eb\u2067"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{Escape(s), Text(s)} {
			if !utf8.ValidString(out) {
				t.Fatalf("%q escapes to invalid UTF-8 %q", s, out)
			}
			for _, r := range out {
				if r != '\n' && r != '\t' && isControl(r) {
					t.Fatalf("%q escapes to %q, which holds %U", s, out, r)
				}
			}
		}
		if Safe(s) != (Escape(s) == s) {
			t.Fatalf("Safe(%q) disagrees with Escape", s)
		}
		// JSON: same document after decoding, no raw DEL or C1.
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var a, c string
		if err := json.Unmarshal(b, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(JSON(b), &c); err != nil || a != c {
			t.Fatalf("JSON changed %q to %q (%v)", a, c, err)
		}
		for _, r := range string(JSON(b)) {
			if r == 0x7f || r >= 0x80 && r <= 0x9f || isBidi(r) {
				t.Fatalf("JSON(%q) holds %U raw", s, r)
			}
		}
	})
}
