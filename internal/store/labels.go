package store

import (
	"fmt"
	"sort"
	"strings"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// labelsText is the canonical text of a label set, as the series table
// holds it: sample.Labels.String() of the set sorted by name, "" for none.
func labelsText(ls sample.Labels) (string, error) {
	for _, l := range ls {
		if l.Name == "" || strings.ContainsAny(l.Name, "=\",{}\n\\") {
			return "", fmt.Errorf("label name %q: want a name without = \" , { } \\ or newline", l.Name)
		}
	}
	if !sort.SliceIsSorted(ls, func(i, j int) bool { return ls[i].Name < ls[j].Name }) {
		ls = append(sample.Labels(nil), ls...)
		sort.SliceStable(ls, func(i, j int) bool { return ls[i].Name < ls[j].Name })
	}
	for i := 1; i < len(ls); i++ {
		if ls[i].Name == ls[i-1].Name {
			return "", fmt.Errorf("label %q twice", ls[i].Name)
		}
	}
	return ls.String(), nil
}

// checkName rejects metric names the series key cannot hold.
func checkName(name string) error {
	if name == "" || strings.ContainsAny(name, "{}\"\n") {
		return fmt.Errorf("metric name %q: want a non-empty name without { } \" or newline", name)
	}
	return nil
}
