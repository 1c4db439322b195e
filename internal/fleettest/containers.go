package fleettest

// Kubernetes containers on a fleet's hosts, as cadvisor (scraped from the
// kubelet, with the `node` label the usual relabelling adds) and
// kube-state-metrics expose them, with known outcomes:
//
//   - healthy: working set at 30–60 % of the limit;
//   - cache_heavy: usage at 97 % of the limit, but four fifths of it page
//     cache, mostly inactive (a file server): the working set is at about
//     35 %, and nothing may fire;
//   - near_anon: RSS climbs to 94 % of the limit: cgroup_near_limit fires;
//   - oom_restarted: RSS climbs to the limit and the container is
//     OOM-killed and restarted in a new cgroup (a new cadvisor id, the kill
//     seen only by kube-state-metrics: restarts + last terminated reason
//     OOMKilled): cgroup_oom_kills fires;
//   - oom_child: the kernel kills one of the container's processes and the
//     container lives on: cadvisor's container_oom_events_total rises by
//     one, nothing restarts: cgroup_oom_kills fires;
//   - oom_looping (when asked for, ContainerOptions.Kinds): the container
//     is OOM-killed every few hours from its first kill on, each time
//     restarted in a new cgroup whose container_oom_events_total reads 1
//     at its end, kube-state-metrics counting the restarts with the last
//     termination reason OOMKilled: cgroup_oom_kills fires.
//
// Every pod also has cadvisor's pod-level series (container="") and pause
// container ("POD"), and every node its aggregate (id="/"), with values a
// reader must not take for a container's (the pod-level working set sits
// at 99 % of the pod's limit).

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"time"
)

// Container kinds.
const (
	Healthy      = "healthy"
	CacheHeavy   = "cache_heavy"
	NearAnon     = "near_anon"
	OOMRestarted = "oom_restarted"
	OOMChild     = "oom_child"
	OOMLooping   = "oom_looping"
)

// Container is one generated container.
type Container struct {
	Node      string `json:"node"`
	Instance  string `json:"instance"` // the node's node_exporter instance
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Name      string `json:"container"`
	Kind      string `json:"kind"`
	Limit     int64  `json:"limit_bytes"`
	// KilledAt is when the kill happened (OOM kinds).
	KilledAt time.Time `json:"killed_at,omitzero"`
}

// Key is the container's name as memdoctor gives it.
func (c Container) Key() string { return c.Namespace + "/" + c.Pod + "/" + c.Name }

// ContainerOptions shape the containers.
type ContainerOptions struct {
	// Hosts are the fleet's hosts (from its manifest); Plain lists the
	// instances that get healthy and cache-heavy containers only.
	Hosts []Host
	Plain []string
	// PerHost containers on each host.
	PerHost int
	// From, To and Interval are the samples' span.
	From, To time.Time
	Interval time.Duration
	// KillAfter: kills happen after this time (inside the range diagnosed)
	// and away from the hosts' reboots.
	KillAfter time.Time
	Seed      uint64
	// Kinds cycle over each host's containers (default: healthy,
	// cache_heavy, near_anon, oom_restarted, oom_child).
	Kinds []string
	// NoNodeLabel lists the instances whose kubelet scrape gives cadvisor's
	// series no node label (kube_pod_info still names the node).
	NoNodeLabel []string
}

// WriteContainers writes the containers' series as one OpenMetrics file
// and returns them.
func WriteContainers(path string, o ContainerOptions) ([]Container, error) {
	rng := rand.New(rand.NewPCG(o.Seed, 0xc0417))
	kinds := []string{Healthy, CacheHeavy, NearAnon, OOMRestarted, OOMChild}
	if len(o.Kinds) > 0 {
		kinds = o.Kinds
	}
	plain, noNode := map[string]bool{}, map[string]bool{}
	for _, p := range o.Plain {
		plain[p] = true
	}
	for _, p := range o.NoNodeLabel {
		noNode[p] = true
	}
	steps := int(o.To.Sub(o.From)/o.Interval) + 1
	var out []Container
	for hi, h := range o.Hosts {
		node := h.Instance[:len(h.Instance)-5]
		for i := range o.PerHost {
			kind := kinds[i%len(kinds)]
			if plain[h.Instance] && kind != Healthy && kind != CacheHeavy {
				kind = Healthy
			}
			c := Container{Node: node, Instance: h.Instance, Namespace: []string{"shop", "data", "batch"}[i%3],
				Pod: fmt.Sprintf("app%d-%d-%04x", hi, i, rng.IntN(1<<16)), Name: []string{"web", "worker", "cache", "api"}[(i/3)%4],
				Kind: kind, Limit: int64(256+128*rng.IntN(8)) << 20}
			if kind == OOMRestarted || kind == OOMChild || kind == OOMLooping {
				for {
					span := o.To.Sub(o.KillAfter) - 4*o.Interval
					at := o.KillAfter.Add(time.Duration(rng.Int64N(int64(span)))).Truncate(o.Interval)
					if !nearReboot(h.Reboots, at, 3*o.Interval) {
						c.KilledAt = at
						break
					}
				}
			}
			out = append(out, c)
		}
	}
	fh, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriterSize(fh, 1<<20)
	// Series by name: OpenMetrics wants a family's lines together.
	lines := map[string][]string{}
	add := func(name, labels string, ts []int64, vs []float64) {
		for j := range ts {
			if math.IsNaN(vs[j]) {
				continue
			}
			lines[name] = append(lines[name], name+"{"+labels+"} "+strconv.FormatFloat(vs[j], 'f', -1, 64)+" "+strconv.FormatInt(ts[j], 10))
		}
	}
	ts := make([]int64, steps)
	for j := range ts {
		ts[j] = o.From.Add(time.Duration(j) * o.Interval).Unix()
	}
	nan := math.NaN()
	for ci, c := range out {
		r := rand.New(rand.NewPCG(o.Seed, uint64(ci)+7))
		lim := float64(c.Limit)
		ws, usage, rss, cache, oomEv, restarts, reason, gen := make([]float64, steps), make([]float64, steps), make([]float64, steps),
			make([]float64, steps), make([]float64, steps), make([]float64, steps), make([]float64, steps), make([]int, steps)
		base := 0.30 + 0.30*r.Float64()
		for j := range steps {
			t := o.From.Add(time.Duration(j) * o.Interval)
			frac := float64(j) / float64(max(1, steps-1))
			noise := 0.02 * math.Sin(float64(j)/7+float64(ci))
			var an, fileInactive, fileActive float64
			switch c.Kind {
			case Healthy:
				an, fileInactive, fileActive = base+noise, 0.05, 0.03
			case CacheHeavy:
				an, fileInactive, fileActive = 0.25+noise/2, 0.62, 0.10
			case NearAnon:
				an, fileInactive, fileActive = 0.60+0.34*frac+noise/4, 0.02, 0.01
				an = min(an, 0.94)
			case OOMRestarted:
				if t.Before(c.KilledAt) {
					an = 0.5 + 0.49*float64(j)/float64(max(1, int(c.KilledAt.Sub(o.From)/o.Interval)))
				} else {
					an = 0.2 + noise
					restarts[j] = 1
					reason[j] = 1
					gen[j] = 1
				}
				fileInactive, fileActive = 0.01, 0.01
			case OOMChild:
				an, fileInactive, fileActive = base+noise, 0.04, 0.02
				if !t.Before(c.KilledAt) {
					oomEv[j] = 1
				}
			case OOMLooping:
				// Killed at KilledAt and every loopEvery after it: each life
				// climbs from 40 % to the limit.
				life := int(c.KilledAt.Sub(o.From) / o.Interval)
				if !t.Before(c.KilledAt) {
					gen[j] = 1 + int(t.Sub(c.KilledAt)/loopEvery)
					life = int(loopEvery / o.Interval)
				}
				born := o.From
				if gen[j] > 0 {
					born = c.KilledAt.Add(time.Duration(gen[j]-1) * loopEvery)
				}
				an = 0.4 + 0.59*float64(t.Sub(born)/o.Interval)/float64(max(1, life))
				fileInactive, fileActive = 0.01, 0.01
				restarts[j] = float64(gen[j])
				if gen[j] > 0 {
					reason[j] = 1
				}
				// Each cgroup's OOM event at its last sample, before the kill.
				if next := t.Add(o.Interval); !next.Before(c.KilledAt) && (t.Before(c.KilledAt) || int(next.Sub(c.KilledAt)/loopEvery)+1 > gen[j]) {
					oomEv[j] = 1
				}
			}
			rss[j] = an * lim
			cache[j] = (fileInactive + fileActive) * lim
			usage[j] = rss[j] + cache[j]
			ws[j] = usage[j] - fileInactive*lim
			if reason[j] == 0 {
				reason[j] = nan // the reason is a series only after a termination
			}
		}
		kubelet := fmt.Sprintf(`instance="%s:10250",job="kubelet",metrics_path="/metrics/cadvisor",namespace="%s",node="%s",pod="%s"`,
			c.Node, c.Namespace, c.Node, c.Pod)
		if noNode[c.Instance] {
			kubelet = fmt.Sprintf(`instance="%s:10250",job="kubelet",metrics_path="/metrics/cadvisor",namespace="%s",pod="%s"`,
				c.Node, c.Namespace, c.Pod)
		}
		uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", ci, ci)
		podCg := "/kubepods/burstable/pod" + uid
		// The container's cgroups: a new one after each restart.
		gens := 0
		for _, g := range gen {
			gens = max(gens, g)
		}
		for g := 0; g <= gens; g++ {
			mask := func(vs []float64) []float64 {
				m := make([]float64, steps)
				for j := range m {
					m[j] = vs[j]
					if gen[j] != g {
						m[j] = nan
					}
				}
				return m
			}
			id := fmt.Sprintf("%s/%064x", podCg, ci<<8+g)
			l := kubelet + fmt.Sprintf(`,container="%s",id="%s",image="registry.example/%s:1",name="%x"`, c.Name, id, c.Name, ci<<8+g)
			add("container_memory_working_set_bytes", l, ts, mask(ws))
			add("container_memory_usage_bytes", l, ts, mask(usage))
			add("container_memory_rss", l, ts, mask(rss))
			add("container_memory_cache", l, ts, mask(cache))
			add("container_spec_memory_limit_bytes", l, ts, mask(fill(steps, lim)))
			add("container_oom_events_total", l, ts, mask(oomEv))
		}
		// The pause container and the pod's own cgroup: never a container.
		pause := kubelet + fmt.Sprintf(`,container="POD",id="%s/%064x",image="registry.k8s.io/pause:3.9",name="pause%d"`, podCg, 1<<20+ci, ci)
		add("container_memory_working_set_bytes", pause, ts, fill(steps, 600<<10))
		add("container_spec_memory_limit_bytes", pause, ts, fill(steps, 0))
		podL := kubelet + fmt.Sprintf(`,id="%s"`, podCg)
		add("container_memory_working_set_bytes", podL, ts, scaled(usage, 1))
		add("container_spec_memory_limit_bytes", podL, ts, scaled(usage, 1/0.99))
		add("container_oom_events_total", podL, ts, fill(steps, 3))
		// kube-state-metrics.
		ksm := fmt.Sprintf(`instance="10.96.0.20:8080",job="kube-state-metrics",namespace="%s",pod="%s"`, c.Namespace, c.Pod)
		add("kube_pod_info", ksm+fmt.Sprintf(`,created_by_kind="ReplicaSet",host_ip="%s",node="%s",uid="%s"`, "10.0.0.1", c.Node, uid), ts, fill(steps, 1))
		cl := ksm + fmt.Sprintf(`,container="%s",uid="%s"`, c.Name, uid)
		add("kube_pod_container_status_restarts_total", cl, ts, restarts)
		add("kube_pod_container_status_last_terminated_reason", cl+`,reason="OOMKilled"`, ts, reason)
	}
	// Each node's aggregate (no container, no pod), near "its limit".
	for _, h := range o.Hosts {
		node := h.Instance[:len(h.Instance)-5]
		l := fmt.Sprintf(`id="/",instance="%s:10250",job="kubelet",metrics_path="/metrics/cadvisor",node="%s"`, node, node)
		if noNode[h.Instance] {
			l = fmt.Sprintf(`id="/",instance="%s:10250",job="kubelet",metrics_path="/metrics/cadvisor"`, node)
		}
		add("container_memory_working_set_bytes", l, ts, fill(steps, 60<<30))
		add("container_spec_memory_limit_bytes", l, ts, fill(steps, 61<<30))
	}
	names := make([]string, 0, len(lines))
	for n := range lines {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		_, _ = fmt.Fprintf(w, "# TYPE %s unknown\n", n) // bufio keeps the error for Flush
		for _, l := range lines[n] {
			_, _ = w.WriteString(l + "\n")
		}
	}
	_, _ = w.WriteString("# EOF\n")
	if err := w.Flush(); err != nil {
		_ = fh.Close()
		return nil, err
	}
	return out, fh.Close()
}

// loopEvery is how often an oom_looping container is killed again.
const loopEvery = 3 * time.Hour

func fill(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func scaled(vs []float64, f float64) []float64 {
	out := make([]float64, len(vs))
	for i, v := range vs {
		out[i] = v * f
	}
	return out
}

func nearReboot(reboots []time.Time, t time.Time, d time.Duration) bool {
	for _, r := range reboots {
		if t.Sub(r) < d && r.Sub(t) < d {
			return true
		}
	}
	return false
}
