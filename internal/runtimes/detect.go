package runtimes

// Which language runtime a process runs, from its mappings (the
// executable is the first file mapped): libjvm.so (HotSpot/OpenJ9 JVMs),
// libpython3.X.so or a python3.X executable (CPython, static builds
// included), libruby or a ruby executable, a node executable or libnode,
// libcoreclr.so (.NET Core and later), and Go binaries by the Go build
// information the linker writes into every Go executable (read from the
// executable through /proc/PID/exe when the caller passes it).

import (
	"io"
	"path"
	"strings"

	"github.com/memdoctor/memdoctor/internal/elfsym"
	"github.com/memdoctor/memdoctor/internal/procfs"
)

// Detection is what a process runs.
type Detection struct {
	Runtime string
	// Version when the mappings or the build information say it.
	Version string
	// Evidence is the mapping or section that told.
	Evidence string
}

// Detect names the runtime of a process from its mappings; exe, when not
// nil, is its executable (for the Go build information). It returns false
// for a process with no known runtime (C, C++, Rust...).
func Detect(maps []procfs.Mapping, exe io.ReaderAt) (Detection, bool) {
	return detect(maps, func() (string, bool) {
		if exe == nil {
			return "", false
		}
		return elfsym.GoVersion(exe, nil)
	})
}

// detect is Detect with the executable's Go version asked of goVersion,
// only when the mappings do not tell.
func detect(maps []procfs.Mapping, goVersion func() (string, bool)) (Detection, bool) {
	exePath := ""
	for _, m := range maps {
		if strings.HasPrefix(m.Path, "/") {
			exePath = strings.TrimSuffix(m.Path, " (deleted)")
			break
		}
	}
	seen := map[string]bool{}
	for _, m := range maps {
		p := strings.TrimSuffix(m.Path, " (deleted)")
		if p == "" || seen[p] || !strings.HasPrefix(p, "/") {
			continue
		}
		seen[p] = true
		base := path.Base(p)
		switch {
		case base == "libjvm.so":
			return Detection{Runtime: JVM, Evidence: p}, true
		case base == "libcoreclr.so":
			return Detection{Runtime: DotNet, Evidence: p}, true
		case strings.HasPrefix(base, "libpython3") && strings.Contains(base, ".so"):
			return Detection{Runtime: Python, Version: pyVersion(strings.TrimPrefix(base, "libpython")), Evidence: p}, true
		case strings.HasPrefix(base, "libruby") && strings.Contains(base, ".so"):
			return Detection{Runtime: Ruby, Version: soVersion(base), Evidence: p}, true
		case strings.HasPrefix(base, "libnode.so"):
			return Detection{Runtime: Node, Evidence: p}, true
		}
	}
	base := path.Base(exePath)
	switch {
	case strings.HasPrefix(base, "python3"):
		return Detection{Runtime: Python, Version: pyVersion(strings.TrimPrefix(base, "python")), Evidence: exePath}, true
	case base == "ruby" || strings.HasPrefix(base, "ruby3") || strings.HasPrefix(base, "ruby2"):
		return Detection{Runtime: Ruby, Evidence: exePath}, true
	case base == "node" || base == "nodejs":
		return Detection{Runtime: Node, Evidence: exePath}, true
	}
	if v, ok := goVersion(); ok {
		return Detection{Runtime: Go, Version: v, Evidence: "Go build information in " + exePath}, true
	}
	return Detection{}, false
}

// pyVersion keeps "3.11" of "3.11.so.1.0" or "3.11".
func pyVersion(s string) string {
	s = strings.TrimSuffix(s, "d")
	if i := strings.Index(s, ".so"); i >= 0 {
		s = s[:i]
	}
	if f := strings.SplitN(s, ".", 3); len(f) >= 2 {
		return f[0] + "." + f[1]
	}
	return s
}

// soVersion keeps "3.1.2" of "libruby-3.1.so.3.1.2" or "libruby.so.3.1".
func soVersion(base string) string {
	if _, v, ok := strings.Cut(base, ".so."); ok {
		return v
	}
	return ""
}

// Hint says how to make a runtime publish its GC metrics for memdoctor.
func Hint(runtime string) string {
	switch runtime {
	case JVM:
		return "memdoctor reads the JVM's hsperfdata file by itself; if it is missing the JVM runs with -XX:-UsePerfData or -XX:+PerfDisableSharedMem: remove that flag, or expose Micrometer (JvmGcMetrics, JvmMemoryMetrics) or the Prometheus jmx_exporter java agent and pass its URL with --scrape"
	case Go:
		return "register client_golang's Go collector (default in prometheus.DefaultRegisterer; collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsGC)) adds forced-GC counts) on an HTTP /metrics handler, then pass its URL with --scrape"
	case Python:
		return "pip install prometheus_client; prometheus_client.start_http_server(PORT, addr='127.0.0.1') exports python_gc_collections_total per generation; pass http://127.0.0.1:PORT/metrics with --scrape"
	case Ruby:
		return "export GC.stat as ruby_gc_stat_<key> gauges (for example prometheus-client-mmap with a GC.stat sampler, or gitlab-exporter's ruby prober) and pass the /metrics URL with --scrape"
	case Node:
		return "npm install prom-client; require('prom-client').collectDefaultMetrics() exports nodejs_gc_duration_seconds and heap sizes; serve register.metrics() on /metrics and pass its URL with --scrape"
	case DotNet:
		return "memdoctor check reads a .NET Core 3.0+ process' collector through its diagnostics socket (dotnet-diagnostic-PID-*-socket in its TMPDIR), which the runtime opens unless DOTNET_EnableDiagnostics=0 (or COMPlus_EnableDiagnostics=0) is set: unset it and restart; else add prometheus-net (DotNetStats, EventCounterAdapter) or OpenTelemetry.Instrumentation.Runtime with the Prometheus exporter, and pass the /metrics URL with --scrape; dotnet-counters monitor System.Runtime shows the same counters live"
	}
	return ""
}
