package dotnet

import (
	"slices"
	"strings"
	"testing"
)

func TestSettingsFromEnv(t *testing.T) {
	vars := map[string]string{"DOTNET_gcServer": "0", "COMPlus_gcServer": "1", "COMPlus_GCHeapHardLimit": "0x10000000",
		"DOTNET_GCHeapCount": "A", "COMPlus_GCHeapHardLimitPercent": "zz"}
	// 3.1 reads COMPlus_ only: DOTNET_ is named as ignored.
	var s Settings
	s.FromEnv(vars, 3)
	if v, ok := s.Bool(SetServer); !ok || !v || s.Values[SetServer].From != "COMPlus_gcServer" {
		t.Errorf("server %v %v from %q, want on from COMPlus_gcServer", v, ok, s.Values[SetServer].From)
	}
	if s.Values[SetHeapHardLimit].Value != 256<<20 {
		t.Errorf("hard limit %d, want 0x10000000 read as hexadecimal", s.Values[SetHeapHardLimit].Value)
	}
	if s.Has(SetHeapCount) || s.Has(SetHeapHardLimitPct) {
		t.Errorf("3.1 read DOTNET_GCHeapCount or a malformed value: %v", s.Values)
	}
	ign := strings.Join(s.Ignored, "; ")
	if !strings.Contains(ign, "DOTNET_gcServer") || !strings.Contains(ign, "DOTNET_GCHeapCount") || !strings.Contains(ign, "COMPlus_GCHeapHardLimitPercent") {
		t.Errorf("ignored: %s", ign)
	}
	// .NET 6 and later read DOTNET_ first.
	var s8 Settings
	s8.FromEnv(vars, 8)
	if v, _ := s8.Bool(SetServer); v || s8.Values[SetServer].From != "DOTNET_gcServer" || s8.Values[SetHeapCount].Value != 10 {
		t.Errorf(".NET 8: %v", s8.Values)
	}
}

func TestSettingsFromRuntimeConfig(t *testing.T) {
	var s Settings
	s.FromEnv(map[string]string{"COMPlus_gcServer": "0"}, 3)
	doc := `{"runtimeOptions": {"tfm": "net8.0", "configProperties": {
		"System.GC.Server": true, "System.GC.Concurrent": "false", "System.GC.HeapHardLimit": 209715200,
		"System.GC.HeapCount": "0x4", "System.GC.HeapHardLimitPercent": "lots", "System.GC.RetainVM": true}}}`
	if err := s.FromRuntimeConfig([]byte(doc), "app.runtimeconfig.json"); err != nil {
		t.Fatal(err)
	}
	want := map[string]Setting{SetServer: {0, "COMPlus_gcServer"}, SetConcurrent: {0, "app.runtimeconfig.json"},
		SetHeapHardLimit: {209715200, "app.runtimeconfig.json"}, SetHeapCount: {4, "app.runtimeconfig.json"}}
	for k, w := range want {
		if s.Values[k] != w {
			t.Errorf("%s = %+v, want %+v", k, s.Values[k], w)
		}
	}
	if len(s.Values) != len(want) || len(s.Ignored) != 1 || !strings.Contains(s.Ignored[0], "HeapHardLimitPercent") {
		t.Errorf("values %v, ignored %v", s.Values, s.Ignored)
	}
	if d := s.Describe(); d != "Workstation GC, not concurrent, heaps 4, heap hard limit (bytes) 209715200" {
		t.Errorf("described as %q", d)
	}
	if err := s.FromRuntimeConfig([]byte("{not json"), "x.runtimeconfig.json"); err == nil || !strings.Contains(err.Error(), "x.runtimeconfig.json") {
		t.Errorf("malformed file: %v", err)
	}
}

func TestRuntimeConfigPaths(t *testing.T) {
	for _, c := range []struct {
		cmd  []string
		want []string
	}{
		{[]string{"dotnet", "bin/App.dll", "--urls", "x"}, []string{"bin/App.runtimeconfig.json"}},
		{[]string{"/usr/bin/dotnet", "exec", "--depsfile", "a.deps.json", "--runtimeconfig", "/etc/app/rc.json", "/app/App.dll"}, []string{"/etc/app/rc.json"}},
		{[]string{"dotnet", "exec", "--depsfile", "a.dll", "/app/Real.DLL"}, []string{"/app/Real.runtimeconfig.json"}},
		{[]string{"dotnet", "run"}, nil},
		{[]string{"dotnet", "--runtimeconfig", "-x"}, nil},
		{[]string{"/app/MyService", "--port", "80"}, []string{"/app/MyService.runtimeconfig.json"}},
		{[]string{"python3", "/srv/host.py", "busy"}, []string{"python3.runtimeconfig.json", "/srv/host.runtimeconfig.json"}},
		{[]string{"/opt/x.y/run"}, []string{"/opt/x.y/run.runtimeconfig.json"}},
		{nil, nil},
	} {
		if got := RuntimeConfigPaths(c.cmd); !slices.Equal(got, c.want) {
			t.Errorf("%q: %q, want %q", c.cmd, got, c.want)
		}
	}
}
