package malloc

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseMI(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		line string
		want miRecord
		ok   bool
	}{
		{`(gdb) `, miRecord{token: -1, kind: '('}, true},
		{`12^done,value="(void *) 0x7f4532000000"`, miRecord{token: 12, kind: '^', class: "done",
			results: map[string]any{"value": "(void *) 0x7f4532000000"}}, true},
		{`3^error,msg="ptrace: Operation not permitted."`, miRecord{token: 3, kind: '^', class: "error",
			results: map[string]any{"msg": "ptrace: Operation not permitted."}}, true},
		{`4^done`, miRecord{token: 4, kind: '^', class: "done", results: map[string]any{}}, true},
		{`~"Thread 3 has target id 'Thread 0x7f (LWP 24230)'\n"`, miRecord{token: -1, kind: '~',
			text: "Thread 3 has target id 'Thread 0x7f (LWP 24230)'\n"}, true},
		{`~"tab\there \"quoted\" \\ \101"`, miRecord{token: -1, kind: '~', text: "tab\there \"quoted\" \\ A"}, true},
		{`*stopped,reason="signal-received",frame={addr="0x1",func="read",args=[]},thread-id="1"`,
			miRecord{token: -1, kind: '*', class: "stopped", results: map[string]any{"reason": "signal-received",
				"frame": map[string]any{"addr": "0x1", "func": "read", "args": []any(nil)}, "thread-id": "1"}}, true},
		{`5^done,memory=[{begin="0x10",contents="7700"}]`, miRecord{token: 5, kind: '^', class: "done",
			results: map[string]any{"memory": []any{map[string]any{"begin": "0x10", "contents": "7700"}}}}, true},
		{`6^done,stack=[frame={level="0"},frame={level="1"}]`, miRecord{token: 6, kind: '^', class: "done",
			results: map[string]any{"stack": []any{map[string]any{"frame": map[string]any{"level": "0"}},
				map[string]any{"frame": map[string]any{"level": "1"}}}}}, true},
		{`=thread-group-exited,id="i1"`, miRecord{token: -1, kind: '=', class: "thread-group-exited",
			results: map[string]any{"id": "i1"}}, true},
		{`warning: not MI`, miRecord{token: -1}, false},
		{`7^done,value="unterminated`, miRecord{}, false},
		{`8^done,x={`, miRecord{}, false},
		{``, miRecord{token: -1}, false},
	} {
		got, ok := parseMI(c.line)
		if ok != c.ok {
			t.Errorf("%q: ok %v", c.line, ok)
			continue
		}
		if !ok {
			continue
		}
		if d := cmp.Diff(c.want, got, cmp.AllowUnexported(miRecord{})); d != "" {
			t.Errorf("%q (-want +got):\n%s", c.line, d)
		}
	}
}

func FuzzParseMI(f *testing.F) {
	for _, s := range []string{`1^done,a={b=[c="d",{e="f"}]}`, `~"x\n"`, `*stopped,frame={}`, `(gdb)`} {
		f.Add(s)
	}
	f.Fuzz(func(_ *testing.T, s string) {
		parseMI(s)
	})
}

func TestMINumberAndQuote(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]uint64{"(void *) 0x7f4532000000": 0x7f4532000000, "0": 0, "-1": ^uint64(0), "1": 1, "0x0": 0} {
		if got, ok := miNumber(in); !ok || got != want {
			t.Errorf("miNumber(%q) = %#x, %v", in, got, ok)
		}
	}
	if _, ok := miNumber("<error>"); ok {
		t.Error("miNumber accepted text")
	}
	if got := miQuote(`a "b" \c`); got != `"a \"b\" \\c"` {
		t.Errorf("miQuote: %s", got)
	}
}
