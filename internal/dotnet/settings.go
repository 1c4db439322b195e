package dotnet

// The collector's settings in force: the runtime reads each from an
// environment variable (COMPlus_ prefix; DOTNET_ too from .NET 6, and
// DOTNET_ first), else from the configProperties of the application's
// runtimeconfig.json; the values of the variables are hexadecimal (with
// or without 0x), those of the file decimal ("0x" strings hexadecimal),
// booleans being "true"/"false" in the file and non-zero in a variable.
// Measured on 3.1.23: COMPlus_gcServer=1 gives Server GC over a
// runtimeconfig.json saying false, DOTNET_gcServer=1 is ignored, and
// COMPlus_GCHeapHardLimit=10000000 caps the heap at 256 MiB.

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
)

// The settings read (keys of Settings).
const (
	SetServer           = "server"
	SetConcurrent       = "concurrent"
	SetHeapCount        = "heap_count"
	SetHeapHardLimit    = "heap_hard_limit"
	SetHeapHardLimitPct = "heap_hard_limit_percent"
	SetGen0Size         = "gen0size"
	SetDynamicAdapt     = "dynamic_adaptation"
)

// settingNames: each setting's variable (after the prefix) and
// runtimeconfig.json property, and whether it is a boolean.
var settingNames = []struct {
	key, env, prop string
	boolean        bool
}{
	{SetServer, "gcServer", "System.GC.Server", true},
	{SetConcurrent, "gcConcurrent", "System.GC.Concurrent", true},
	{SetHeapCount, "GCHeapCount", "System.GC.HeapCount", false},
	{SetHeapHardLimit, "GCHeapHardLimit", "System.GC.HeapHardLimit", false},
	{SetHeapHardLimitPct, "GCHeapHardLimitPercent", "System.GC.HeapHardLimitPercent", false},
	{SetGen0Size, "GCgen0size", "System.GC.Gen0Size", false},
	{SetDynamicAdapt, "GCDynamicAdaptationMode", "System.GC.DynamicAdaptationMode", false},
}

// EnvNames lists the variables read from a process' environment (and
// nothing else of it is kept).
func EnvNames() []string {
	var out []string
	for _, s := range settingNames {
		out = append(out, "DOTNET_"+s.env, "COMPlus_"+s.env)
	}
	return out
}

// Setting is one setting's value (booleans 0 or 1) and where it came from
// (the variable's name, or the runtimeconfig.json file's base name).
type Setting struct {
	Value uint64
	From  string
}

// Settings are the collector's settings found; Ignored the variables set
// that this runtime does not read (DOTNET_ before .NET 6) and the values
// it could not parse.
type Settings struct {
	Values  map[string]Setting
	Ignored []string
}

// Has says whether a setting was found.
func (s *Settings) Has(key string) bool {
	_, ok := s.Values[key]
	return ok
}

// Bool returns a boolean setting and whether it is set.
func (s *Settings) Bool(key string) (bool, bool) {
	v, ok := s.Values[key]
	return v.Value != 0, ok
}

// Sources lists where the settings came from, sorted.
func (s *Settings) Sources() []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s.Values {
		if !seen[v.From] {
			seen[v.From] = true
			out = append(out, v.From)
		}
	}
	sort.Strings(out)
	return out
}

// MajorVersion reads the major version of a runtime version ("3.1.23":
// 3); 0 when unknown.
func MajorVersion(v string) int {
	m, _, _ := strings.Cut(v, ".")
	n, err := strconv.Atoi(m)
	if err != nil || n < 0 || n > 1000 {
		return 0
	}
	return n
}

// parseHex reads a variable's value as the runtime does: hexadecimal,
// with or without 0x.
func parseHex(v string) (uint64, bool) {
	v = strings.TrimSpace(v)
	v = strings.TrimPrefix(strings.TrimPrefix(v, "0x"), "0X")
	n, err := strconv.ParseUint(v, 16, 64)
	return n, err == nil
}

// FromEnv applies the variables of vars (name to value) in force for a
// runtime of major version major (0: unknown, both prefixes read): they
// win over the file's properties, as in the runtime.
func (s *Settings) FromEnv(vars map[string]string, major int) {
	if s.Values == nil {
		s.Values = map[string]Setting{}
	}
	dotnet := major == 0 || major >= 6
	for _, n := range settingNames {
		for _, prefix := range []string{"DOTNET_", "COMPlus_"} {
			name := prefix + n.env
			v, ok := vars[name]
			if !ok {
				continue
			}
			if prefix == "DOTNET_" && !dotnet {
				s.Ignored = append(s.Ignored, fmt.Sprintf("%s (read from .NET 6 on; this runtime reads COMPlus_%s)", name, n.env))
				continue
			}
			x, ok := parseHex(v)
			if !ok {
				s.Ignored = append(s.Ignored, name+" (not a hexadecimal number)")
				continue
			}
			if n.boolean && x != 0 {
				x = 1
			}
			s.Values[n.key] = Setting{Value: x, From: name}
			break
		}
	}
}

// maxRuntimeConfig bounds a runtimeconfig.json read.
const maxRuntimeConfig = 1 << 20

// FromRuntimeConfig applies the GC properties of a runtimeconfig.json
// (runtimeOptions.configProperties) not already set by a variable; from
// names the file.
func (s *Settings) FromRuntimeConfig(data []byte, from string) error {
	if s.Values == nil {
		s.Values = map[string]Setting{}
	}
	var doc struct {
		RuntimeOptions struct {
			ConfigProperties map[string]json.RawMessage `json:"configProperties"`
		} `json:"runtimeOptions"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: not a runtimeconfig.json: %w", from, err)
	}
	props := doc.RuntimeOptions.ConfigProperties
	for _, n := range settingNames {
		raw, ok := props[n.prop]
		if !ok || s.Has(n.key) {
			continue
		}
		v, ok := propValue(raw, n.boolean)
		if !ok {
			s.Ignored = append(s.Ignored, fmt.Sprintf("%s in %s (value %.40s)", n.prop, from, raw))
			continue
		}
		s.Values[n.key] = Setting{Value: v, From: from}
	}
	return nil
}

// propValue reads a property: a boolean as true/false (JSON or string),
// a number as a JSON number or a string (0x: hexadecimal, else decimal).
func propValue(raw json.RawMessage, boolean bool) (uint64, bool) {
	var str string
	if err := json.Unmarshal(raw, &str); err != nil {
		str = string(raw)
	}
	str = strings.TrimSpace(str)
	if boolean {
		switch strings.ToLower(str) {
		case "true":
			return 1, true
		case "false":
			return 0, true
		}
		return 0, false
	}
	if h, ok := strings.CutPrefix(strings.ToLower(str), "0x"); ok {
		n, err := strconv.ParseUint(h, 16, 64)
		return n, err == nil
	}
	n, err := strconv.ParseUint(str, 10, 64)
	return n, err == nil
}

// hostOptions are the dotnet host's options that take a value.
var hostOptions = map[string]bool{"--additionalprobingpath": true, "--depsfile": true, "--runtimeconfig": true,
	"--fx-version": true, "--roll-forward": true, "--additional-deps": true, "--roll-forward-on-no-candidate-fx": true}

// RuntimeConfigPaths lists, from a process' command line (hostile: only
// the paths are taken, never run), where its runtimeconfig.json may be:
// the one `dotnet exec --runtimeconfig` names; else beside the entry
// assembly, its name with .runtimeconfig.json for its extension: the
// first .dll argument of `dotnet`, an application host itself
// (argv[0]), or the first argument of another host (a script hosting the
// runtime). At most 2 paths, each as the process wrote it (relative ones
// are taken from its working directory).
func RuntimeConfigPaths(cmdline []string) []string {
	if len(cmdline) == 0 {
		return nil
	}
	ok := func(p string) bool {
		return p != "" && len(p) <= 4096 && !strings.ContainsRune(p, 0) && !strings.HasPrefix(p, "-")
	}
	beside := func(p string) string {
		ext := path.Ext(p)
		if ext == "" || strings.Contains(ext, "/") {
			return p + ".runtimeconfig.json"
		}
		return strings.TrimSuffix(p, ext) + ".runtimeconfig.json"
	}
	if path.Base(cmdline[0]) == "dotnet" {
		args := cmdline[1:]
		for i := 0; i < len(args) && i < 64; i++ {
			a := args[i]
			switch {
			case a == "exec":
			case a == "--runtimeconfig" && i+1 < len(args):
				if ok(args[i+1]) {
					return []string{args[i+1]}
				}
				return nil
			case hostOptions[a]:
				i++
			case strings.HasPrefix(a, "-"):
			case strings.HasSuffix(strings.ToLower(a), ".dll") && ok(a):
				return []string{beside(a)}
			default:
				return nil // an SDK command (dotnet run, dotnet test ...)
			}
		}
		return nil
	}
	var out []string
	if ok(cmdline[0]) {
		out = append(out, beside(cmdline[0]))
	}
	if len(cmdline) > 1 && ok(cmdline[1]) {
		out = append(out, beside(cmdline[1]))
	}
	return out
}

// Describe writes the settings for people: "Server GC, concurrent, 2
// heaps, heap hard limit 268435456 bytes".
func (s *Settings) Describe() string {
	var parts []string
	if v, ok := s.Bool(SetServer); ok {
		parts = append(parts, map[bool]string{true: "Server GC", false: "Workstation GC"}[v])
	}
	if v, ok := s.Bool(SetConcurrent); ok {
		parts = append(parts, map[bool]string{true: "concurrent", false: "not concurrent"}[v])
	}
	for _, n := range []struct{ key, label string }{
		{SetHeapCount, "heaps"}, {SetHeapHardLimit, "heap hard limit (bytes)"}, {SetHeapHardLimitPct, "heap hard limit (% of memory)"},
		{SetGen0Size, "gen0 size (bytes)"}, {SetDynamicAdapt, "dynamic adaptation mode"},
	} {
		if v, ok := s.Values[n.key]; ok {
			parts = append(parts, fmt.Sprintf("%s %d", n.label, v.Value))
		}
	}
	return strings.Join(parts, ", ")
}
