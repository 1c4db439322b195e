package history

import (
	"fmt"
	"time"

	"github.com/memdoctor/memdoctor/internal/rightsize"
	"github.com/memdoctor/memdoctor/internal/store"
)

// RightsizeOptions are rightsize's choices (its minimum range, and the
// cgroup subtree read).
type RightsizeOptions struct {
	MinRange time.Duration
	// Cgroup, when not "", reads only that cgroup and those below it.
	Cgroup string
}

// RightsizeReport is what rightsize prints.
type RightsizeReport = rightsize.Report

// Rightsize recommends a memory request and limit for every container
// (memory cgroup) the source recorded over since … until, one instance
// at a time: only the series rightsize reads, at history's step.
func Rightsize(s *Source, since, until string, o RightsizeOptions) (*RightsizeReport, error) {
	rep := &rightsize.Report{Source: s.Path, MinRange: o.MinRange.String(), Choices: rightsize.Choices()}
	ro := rightsize.Options{MinRange: o.MinRange}
	for _, inst := range s.Instances {
		first, last, err := s.Store.TimeRange(inst)
		if err != nil {
			return nil, err
		}
		win, err := StoreWindow(first, last, since, until)
		if err != nil {
			return nil, err
		}
		w, _, err := s.window(store.Query{Instance: inst, Names: rightsize.WindowSeries, Keep: rightsize.WindowKeep()}, win)
		if err != nil {
			return nil, fmt.Errorf("instance %s: %w", inst, err)
		}
		if rep.From.IsZero() || win.From.Before(rep.From) {
			rep.From = win.From
		}
		if win.To.After(rep.To) {
			rep.To = win.To
		}
		cs := rightsize.FromWindow(w, o.Cgroup)
		if len(s.Instances) > 1 {
			for _, c := range cs {
				c.Name = inst + " " + c.Name
			}
		}
		rep.Items = append(rep.Items, ro.Recommend(cs)...)
	}
	if len(rep.Items) == 0 {
		what := "no memory cgroup"
		if o.Cgroup != "" {
			what = "no memory cgroup at or below " + o.Cgroup
		}
		return nil, fmt.Errorf("%s: %s recorded: the recorder keeps the largest cgroups and those near a limit; record the host with memdoctor record, or name a recorded --cgroup", s.Path, what)
	}
	for _, n := range s.Notes {
		rep.Notes = append(rep.Notes, n.Source+": "+n.Message)
	}
	return rep, nil
}
