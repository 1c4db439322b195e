package diagnose

import (
	"regexp"
	"strings"
	"sync"

	"github.com/memdoctor/memdoctor/internal/model"
)

// cgFiles are the files names of the cgroup directory dir, each one shell
// word (model.ShellPath: a cgroup's name may hold any character but /),
// separated by spaces.
func cgFiles(dir string, names ...string) string {
	ws := make([]string, len(names))
	for i, n := range names {
		ws[i] = model.ShellPath(dir + "/" + n)
	}
	return strings.Join(ws, " ")
}

// kubeNameRE is a Kubernetes object name (RFC 1123 subdomain: pods,
// namespaces and containers are named within it).
var kubeNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`) })

// kubeWord is a Kubernetes name as it goes into a command: as is when it is
// one Kubernetes accepts (none needs quoting, none starts with -), else
// model.Unprintable, unquoted (for a word already in quotes).
func kubeWord(s string) string {
	if len(s) <= 253 && kubeNameRE().MatchString(s) {
		return s
	}
	return model.Unprintable
}

// kubeName is kubeWord as a shell word of its own.
func kubeName(s string) string { return model.ShellQuote(kubeWord(s)) }

// fileWord is a name made fit to be part of a file name memdoctor
// suggests: every character but ASCII letters, digits, '.', '_' and '-'
// becomes '_' (a process names itself as it likes: a / in its name would
// put the file elsewhere, a $ or a quote would need quoting).
func fileWord(s string) string {
	if s == "" {
		return "_"
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, s)
}
