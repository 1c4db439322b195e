package prometheus

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/diagnose"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/prom"
	"github.com/memdoctor/memdoctor/internal/promql"
	"github.com/memdoctor/memdoctor/internal/rightsize"
	"github.com/memdoctor/memdoctor/internal/usecase/history"
)

// Right-sizing from cadvisor and kube-state-metrics: the containers seen
// over the range are listed with one query, then read in batches of pods
// (four range queries a batch, each step the series' highest value within
// it), so memory holds one batch's points whatever the fleet's size.

// RightsizeBatch is how many pods a batch reads.
const RightsizeBatch = 200

// RightsizePoints is how many steps a container's range is read at, at
// most: the step is the range over it, at least the window's step.
const RightsizePoints = 1000

type ctrKey struct{ ns, pod, name string }

// Rightsize recommends each container's memory request and limit from
// what Prometheus holds of it over win (cadvisor's rss, cache, usage,
// working set and limit; kube-state-metrics' restarts and OOMKilled
// terminations; cadvisor's OOM events).
func Rightsize(ctx context.Context, c *prom.Client, match string, win history.Window, minRange time.Duration) (*history.RightsizeReport, error) {
	rep := &rightsize.Report{Source: c.URL(), From: win.From, To: win.To, MinRange: minRange.String(), Choices: rightsize.Choices()}
	cm, r := diagnose.ContainerMatch(match), "["+promql.Duration(win.Range())+"]"
	by := "namespace, pod, container"
	sel := func(name string, extra ...string) string {
		return promql.Selector(name, cm, append([]string{diagnose.ContainerMatchers}, extra...)...)
	}
	list, err := c.Query(ctx, "max by ("+by+") (last_over_time("+sel(diagnose.CadvisorWorkingSet)+r+"))", win.To)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("%s has no %s of containers (%s) from %s to %s: right-sizing from Prometheus needs cadvisor's container series (the kubelet's /metrics/cadvisor)",
			c.URL(), diagnose.CadvisorWorkingSet, diagnose.ContainerMatchers, win.From.Format(time.RFC3339), win.To.Format(time.RFC3339))
	}
	key := func(m prom.Labels) ctrKey {
		return ctrKey{m["namespace"], m["pod"], m["container"]}
	}
	// What is read once for all: restarts, OOM kills, limits.
	restarts, err := byContainer(ctx, c, "sum by ("+by+") (increase("+promql.Selector(diagnose.KSMRestarts, cm)+r+"))", win.To, key)
	if err != nil {
		return nil, err
	}
	oomEvents, err := byContainer(ctx, c, "sum by ("+by+") (increase("+sel(diagnose.CadvisorOOMEvents)+r+"))", win.To, key)
	if err != nil {
		return nil, err
	}
	oomKilled, err := byContainer(ctx, c, "max by ("+by+") (max_over_time("+promql.Selector(diagnose.KSMLastTerminated, cm, `reason="OOMKilled"`)+r+"))", win.To, key)
	if err != nil {
		return nil, err
	}
	limits, err := byContainer(ctx, c, "max by ("+by+") (last_over_time("+sel(diagnose.CadvisorLimit)+r+"))", win.To, key)
	if err != nil {
		return nil, err
	}
	pods := map[[2]string][]ctrKey{}
	for _, s := range list {
		k := key(s.Labels)
		pods[[2]string{k.ns, k.pod}] = append(pods[[2]string{k.ns, k.pod}], k)
	}
	podList := make([][2]string, 0, len(pods))
	for p := range pods {
		podList = append(podList, p)
	}
	sort.Slice(podList, func(i, j int) bool {
		return podList[i][0] < podList[j][0] || podList[i][0] == podList[j][0] && podList[i][1] < podList[j][1]
	})
	step := max(win.Step, win.Range()/RightsizePoints).Round(time.Second)
	ro := rightsize.Options{MinRange: minRange}
	for start := 0; start < len(podList); start += RightsizeBatch {
		batch := podList[start:min(start+RightsizeBatch, len(podList))]
		var alts []string
		want := map[ctrKey]bool{}
		for _, p := range batch {
			alts = append(alts, regexp.QuoteMeta(p[1]))
			for _, k := range pods[p] {
				want[k] = true
			}
		}
		podRe := `pod=~"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(strings.Join(alts, "|")) + `"`
		gauges := map[ctrKey]map[string]map[int64]float64{}
		for _, name := range []string{diagnose.CadvisorRSS, diagnose.CadvisorCache, diagnose.CadvisorUsage, diagnose.CadvisorWorkingSet} {
			ss, err := c.QueryRange(ctx, "max by ("+by+") (max_over_time("+sel(name, podRe)+"["+promql.Duration(step)+"]))", win.From, win.To, step)
			if err != nil {
				return nil, err
			}
			for _, s := range ss {
				k := key(s.Labels)
				if !want[k] {
					continue
				}
				if gauges[k] == nil {
					gauges[k] = map[string]map[int64]float64{}
				}
				m := make(map[int64]float64, len(s.Points))
				for _, p := range s.Points {
					m[p.T] = p.V
				}
				gauges[k][name] = m
			}
		}
		var cs []*rightsize.Container
		for _, p := range batch {
			for _, k := range pods[p] {
				ct := &rightsize.Container{Name: k.ns + "/" + k.pod + "/" + k.name, Namespace: k.ns, Pod: k.pod, Container: k.name, Coarse: true,
					OOMKills: -1, Restarts: -1}
				if v, ok := restarts[k]; ok {
					ct.Restarts = math.Round(v)
				}
				if v, ok := oomEvents[k]; ok {
					ct.OOMKills = math.Round(v)
				}
				if oomKilled[k] > 0 {
					ct.OOMKills = max(ct.OOMKills, 1)
				}
				if v := limits[k]; v > 0 && v < 1<<62 {
					ct.LimitBytes = int64(v)
				}
				ct.Steps = cadvisorSteps(gauges[k], ct.LimitBytes)
				cs = append(cs, ct)
			}
		}
		rep.Items = append(rep.Items, ro.Recommend(cs)...)
	}
	sort.SliceStable(rep.Items, func(i, j int) bool { return rep.Items[i].Name < rep.Items[j].Name })
	rep.Queries = c.Answers()
	return rep, nil
}

// byContainer runs an instant query and keys its values by container.
func byContainer(ctx context.Context, c *prom.Client, expr string, at time.Time, key func(prom.Labels) ctrKey) (map[ctrKey]float64, error) {
	v, err := c.Query(ctx, expr, at)
	if err != nil {
		return nil, err
	}
	out := make(map[ctrKey]float64, len(v))
	for _, s := range v {
		out[key(s.Labels)] = s.Value
	}
	return out, nil
}

// cadvisorSteps turns cadvisor's gauges of one container into steps, the
// split made by model.OOMMemoryOf: rss as anon, cache as file, usage less
// the working set as inactive page cache, the rest of the cache active.
func cadvisorSteps(g map[string]map[int64]float64, limit int64) []rightsize.Step {
	usage := g[diagnose.CadvisorUsage]
	rss := g[diagnose.CadvisorRSS]
	if usage == nil || rss == nil {
		return nil
	}
	var lim *int64
	if limit > 0 {
		lim = &limit
	}
	ts := make([]int64, 0, len(usage))
	for t := range usage {
		if _, ok := rss[t]; ok {
			ts = append(ts, t)
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	out := make([]rightsize.Step, 0, len(ts))
	for _, t := range ts {
		u, cache := usage[t], g[diagnose.CadvisorCache][t]
		stat := map[string]int64{"anon": int64(rss[t]), "file": int64(cache)}
		if ws, ok := g[diagnose.CadvisorWorkingSet][t]; ok {
			inactive := max(u-ws, 0)
			stat["inactive_file"], stat["active_file"] = int64(inactive), int64(max(cache-inactive, 0))
		}
		out = append(out, rightsize.Step{T: time.UnixMilli(t), M: model.OOMMemoryOf(stat, int64(u), lim),
			MappedBytes: math.NaN(), RefaultPages: math.NaN(), PressureSeconds: math.NaN(), HeapUsedBytes: math.NaN()})
	}
	return out
}
