package lint

// The corrected lines a finding prints are pasted into the file they fix:
// each must be valid there. These tests apply every firing case's lines to
// a copy of its file (each replaces the line its comment names; "add" lines
// go to the end, or next to the other setting in Python) and load the
// result with the parser the producer itself uses: java.util.Properties
// with the Java client's integer parsing, librdkafka's rd_kafka_conf_set fed
// line by line as kcat feeds it, and Python's own parser. The patched file
// must then be quiet for the rule.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// loadPropertiesJava loads a file with java.util.Properties and parses the
// named keys as the Kafka client's ConfigDef does (trimmed, then
// Integer.parseInt / Long.parseLong); it prints every key=value.
const loadPropertiesJava = `import java.io.FileInputStream;
import java.util.Properties;
import java.util.TreeSet;

public class LoadProps {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        try (FileInputStream in = new FileInputStream(args[0])) {
            p.load(in);
        }
        for (int i = 1; i < args.length; i++) {
            String v = p.getProperty(args[i]);
            if (v == null) {
                System.err.println(args[i] + ": not set");
                System.exit(3);
            }
            if (args[i].equals("batch.size")) {
                Integer.parseInt(v.trim()); // ConfigDef.Type.INT
            } else {
                Long.parseLong(v.trim()); // ConfigDef.Type.LONG
            }
        }
        for (String k : new TreeSet<>(p.stringPropertyNames())) {
            System.out.println(k + "=" + p.getProperty(k));
        }
    }
}
`

// loadRdkafkaC reads a configuration file as kcat's -F does (skip leading
// white space, blank lines and lines starting with '#'; strip trailing
// white space; split at the first '='; rd_kafka_conf_set), then prints the
// named keys as librdkafka reads them back.
const loadRdkafkaC = `#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <librdkafka/rdkafka.h>

int main(int argc, char **argv) {
	char buf[4096], errstr[512];
	int line = 0;
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	FILE *fp = fopen(argv[1], "r");
	if (!fp) { perror(argv[1]); return 2; }
	while (fgets(buf, sizeof(buf), fp)) {
		char *s = buf, *t;
		line++;
		while (isspace((unsigned char)*s)) s++;
		if (!*s || *s == '#') continue;
		t = s + strlen(s) - 1;
		while (t > s && isspace((unsigned char)*t)) *t-- = '\0';
		if (!(t = strchr(s, '='))) { fprintf(stderr, "%s:%d: expected key=value\n", argv[1], line); return 1; }
		*t++ = '\0';
		if (rd_kafka_conf_set(conf, s, t, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) {
			fprintf(stderr, "%s:%d: %s\n", argv[1], line, errstr);
			return 1;
		}
	}
	for (int i = 2; i < argc; i++) {
		size_t n = sizeof(buf);
		if (rd_kafka_conf_get(conf, argv[i], buf, &n) != RD_KAFKA_CONF_OK) { fprintf(stderr, "%s: unknown\n", argv[i]); return 1; }
		printf("%s=%s\n", argv[i], buf);
	}
	rd_kafka_conf_destroy(conf);
	return 0;
}
`

// loadPython parses a file with Python's own parser and prints, as JSON,
// the kafka-python settings given as keyword arguments of KafkaProducer(...)
// or as entries of a dict literal, evaluated with ast.literal_eval.
const loadPython = `import ast, json, sys
tree = ast.parse(open(sys.argv[1]).read(), sys.argv[1])
keys = set(sys.argv[2:])
out = {}
for node in ast.walk(tree):
    if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "KafkaProducer":
        for kw in node.keywords:
            if kw.arg in keys:
                out[kw.arg] = ast.literal_eval(kw.value)
    if isinstance(node, ast.Dict):
        for k, v in zip(node.keys, node.values):
            if isinstance(k, ast.Constant) and k.value in keys:
                out[k.value] = ast.literal_eval(v)
for k, v in out.items():
    if type(v) is not int:
        sys.exit("%s=%r: not an int" % (k, v))
json.dump(out, sys.stdout)
`

var whereRe = regexp.MustCompile(`^# .*: (line (\d+), was .*|add)( \(.*\))?$`)

// applyFix puts a remedy's lines into the file's text: every setting line
// comes after its own comment line, which names the line it replaces or
// says add.
func applyFix(t *testing.T, orig string, f *File, cmds []string) string {
	t.Helper()
	lines := strings.Split(orig, "\n")
	replace := map[int][]string{}
	var add []string
	last := 0
	if len(cmds)%2 != 0 {
		t.Fatalf("%s: lines do not come in comment/setting pairs: %q", f.Path, cmds)
	}
	for i := 0; i < len(cmds); i += 2 {
		m := whereRe.FindStringSubmatch(cmds[i])
		if m == nil || strings.HasPrefix(cmds[i+1], "#") {
			t.Fatalf("%s: want a comment naming the line, then the setting: %q", f.Path, cmds[i:i+2])
		}
		if m[1] == "add" {
			add = append(add, cmds[i], cmds[i+1])
			continue
		}
		n, _ := strconv.Atoi(m[2])
		if n < 1 || n > len(lines) {
			t.Fatalf("%s: line %d of %d", f.Path, n, len(lines))
		}
		replace[n] = []string{cmds[i], cmds[i+1]}
		last = max(last, n)
	}
	if f.Format == Python && len(add) > 0 {
		if last == 0 {
			t.Fatalf("%s: nowhere to add %q", f.Path, add)
		}
		replace[last] = append(replace[last], add...)
		add = nil
	}
	var out []string
	for i, l := range lines {
		if r, ok := replace[i+1]; ok {
			out = append(out, r...)
			continue
		}
		out = append(out, l)
	}
	return strings.Join(append(out, add...), "\n") + "\n"
}

// realParsers builds the loaders once per test; a missing one skips only
// its format.
type realParsers struct {
	dir, rdkafkaBin string
	// why each loader is missing; "" when it is there
	javaWhy, rdkafkaWhy, pythonWhy string
}

func buildParsers(t *testing.T) *realParsers {
	t.Helper()
	p := &realParsers{dir: t.TempDir()}
	write := func(name, text string) string {
		path := filepath.Join(p.dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	if _, err := exec.LookPath("javac"); err != nil {
		p.javaWhy = "javac not installed (scripts/install-test-deps.sh installs openjdk-17-jdk-headless)"
	} else if out, err := exec.Command("javac", "-d", p.dir, write("LoadProps.java", loadPropertiesJava)).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	p.rdkafkaBin = filepath.Join(p.dir, "rdkafka_load")
	if out, err := exec.Command("gcc", "-o", p.rdkafkaBin, write("rdkafka_load.c", loadRdkafkaC), "-lrdkafka").CombinedOutput(); err != nil {
		p.rdkafkaWhy = fmt.Sprintf("cannot build against librdkafka (scripts/install-test-deps.sh installs librdkafka-dev): %v: %s", err, firstLine(string(out)))
	}
	write("load.py", loadPython)
	if _, err := exec.LookPath("python3"); err != nil {
		p.pythonWhy = "python3 not installed"
	}
	return p
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

// load returns the settings the real parser read from path, by the name
// the file uses, or the parser's error.
func (p *realParsers) load(t *testing.T, format Format, path string, keys []string) (map[string]int64, error) {
	t.Helper()
	var cmd *exec.Cmd
	switch format {
	case Java:
		if p.javaWhy != "" {
			t.Skip(p.javaWhy)
		}
		cmd = exec.Command("java", append([]string{"-cp", p.dir, "LoadProps", path}, keys...)...)
	case Librdkafka:
		if p.rdkafkaWhy != "" {
			t.Skip(p.rdkafkaWhy)
		}
		cmd = exec.Command(p.rdkafkaBin, append([]string{path}, keys...)...)
	case Python:
		if p.pythonWhy != "" {
			t.Skip(p.pythonWhy)
		}
		cmd = exec.Command("python3", append([]string{filepath.Join(p.dir, "load.py"), path}, keys...)...)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	got := map[string]int64{}
	if format == Python {
		if err := json.Unmarshal(out, &got); err != nil {
			return nil, fmt.Errorf("%w: %s", err, out)
		}
		return got, nil
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, v, _ := strings.Cut(l, "=")
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			got[k] = n
		} else if strings.Contains(strings.Join(keys, " "), k) {
			return nil, fmt.Errorf("%s=%q read back is not a number", k, v)
		}
	}
	return got, nil
}

// TestFixLinesLoadWithRealParsers: every firing case's corrected lines,
// put into the file, load with the client's own parser as the numbers
// recommended, and leave nothing for the rule to flag.
func TestFixLinesLoadWithRealParsers(t *testing.T) {
	t.Parallel()
	parsers := buildParsers(t)
	files, err := filepath.Glob("testdata/kafka_producer_batching/*")
	if err != nil {
		t.Fatal(err)
	}
	fired := map[Format]int{}
	for _, path := range files {
		f, err := Load(path, "")
		if err != nil {
			t.Fatal(err)
		}
		fs := Lint(f, Options{})
		if len(fs) == 0 {
			continue
		}
		fired[f.Format]++
		t.Run(filepath.Base(path), func(t *testing.T) {
			cmds := fs[0].Remedies[0].Commands
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			patched := applyFix(t, string(orig), f, cmds)
			out := filepath.Join(t.TempDir(), filepath.Base(path))
			if err := os.WriteFile(out, []byte(patched), 0o644); err != nil {
				t.Fatal(err)
			}
			// What the rule recommends, by the name the file uses.
			want := map[string]int64{}
			for _, s := range f.Settings {
				switch name, _ := canonical(f.Format, s.Key); name {
				case "batch.size":
					want[s.Key] = 65536
					if f.Format == Librdkafka {
						want[s.Key] = 1000000
					}
				case "batch.num.messages":
					want[s.Key] = 10000
				case "linger.ms":
					want[s.Key] = 20
				}
			}
			if _, ok := want[clientKey(f.Format, "linger.ms")]; !ok && f.Format != Librdkafka {
				want[clientKey(f.Format, "linger.ms")] = 20 // added
			}
			var keys []string
			for k := range want {
				keys = append(keys, k)
			}
			got, err := parsers.load(t, f.Format, out, keys)
			if err != nil {
				t.Fatalf("%s read as %s with the fix applied:\n%s\nerror: %v", path, f.Format, patched, err)
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s=%d read back, want %d; file:\n%s", k, got[k], v, patched)
				}
			}
			again, err := Parse(out, []byte(patched), f.Format)
			if err != nil {
				t.Fatal(err)
			}
			if left := Lint(again, Options{}); len(left) != 0 {
				t.Errorf("the patched file still fires: %s\n%s", left[0].Summary, patched)
			}
		})
	}
	for _, fm := range []Format{Java, Librdkafka, Python} {
		if fired[fm] == 0 {
			t.Errorf("no firing case read as %s", fm)
		}
	}
}

// TestFixLinesKeepInlineCommentsOut: the loaders above reject what the
// clients reject (else the test above proves nothing): the old way, a
// trailing "# where" after the value, fails the Java client's integer
// parsing and Python's parser. librdkafka 2.0 reads an integer with strtol
// and ignores what follows, so there the check is the syntax kcat feeds
// it: no white space around "=" (Java allows it, librdkafka then knows no
// property "batch.size ").
func TestFixLinesKeepInlineCommentsOut(t *testing.T) {
	t.Parallel()
	parsers := buildParsers(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		format Format
		text   string
	}{
		{Java, "batch.size=65536   # producer.properties: line 4, was 20\n"},
		{Librdkafka, "batch.size = 1000000\n"},
		{Python, "KafkaProducer(\n    batch_size=65536 # c\n    linger_ms=20,\n)\n"},
	} {
		t.Run(string(tc.format), func(t *testing.T) {
			path := filepath.Join(dir, string(tc.format))
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			key := "batch.size"
			if tc.format == Python {
				key = "batch_size"
			}
			if got, err := parsers.load(t, tc.format, path, []string{key}); err == nil {
				t.Errorf("%q loaded as %v: the loader does not check what the client checks", tc.text, got)
			} else {
				t.Logf("rejected as the client rejects it: %v", err)
			}
		})
	}
}
