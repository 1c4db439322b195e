package text

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/format"
	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/rightsize"
	"github.com/memdoctor/memdoctor/internal/termsafe"
)

// RightsizeText prints rightsize's table, then each container's reasons,
// runtime settings and the common rule's verdict.
func RightsizeText(w io.Writer, r *rightsize.Report) error {
	pf := func(format string, a ...any) { _, _ = termsafe.Fprintf(w, format, a...) }
	hb := func(b int64) string {
		if b <= 0 {
			return "-"
		}
		return format.Bytes(b)
	}
	pf("%s, %s … %s\n%s\n\n", r.Source, r.From.UTC().Format(time.RFC3339), r.To.UTC().Format(time.RFC3339), r.Choices)
	pf("%-40s %10s %10s %10s %-10s %12s %s\n", "CONTAINER", "REQUEST", "LIMIT", "NOW", "CONFIDENCE", "MAX WS+15%", "COMMON RULE")
	for _, c := range r.Items {
		if c.Refused != "" {
			pf("%-40s %10s %10s %10s %-10s %12s %s\n", c.Name, "refused", "-", hb(c.CurrentLimitBytes), c.Confidence.Level, hb(c.Common.LimitBytes), c.Common.Verdict)
			continue
		}
		pf("%-40s %10s %10s %10s %-10s %12s %s\n", c.Name, hb(c.RequestBytes), hb(c.LimitBytes), hb(c.CurrentLimitBytes), c.Confidence.Level, hb(c.Common.LimitBytes), c.Common.Verdict)
	}
	for _, c := range r.Items {
		pf("\n%s\n", c.Name)
		if c.Refused != "" {
			pf("  refused: %s\n", c.Refused)
			if c.Leak != nil {
				for _, rm := range c.Leak.Remedies {
					pf("  %s\n", rm.Title)
				}
			}
			pf("  data: %s, %d samples\n", c.Confidence.Why, c.Confidence.Samples)
			continue
		}
		pf("  unreclaimable (anon, shmem, kernel): p99 %s, max %s; page cache up to %s; working set up to %s\n",
			format.Bytes(c.UnreclaimableP99Bytes), format.Bytes(c.UnreclaimableMaxBytes), format.Bytes(c.PageCacheMaxBytes), format.Bytes(c.WorkingSetMaxBytes))
		pf("  page cache need %s: %s\n", format.Bytes(c.CacheNeedBytes), c.CacheWhy)
		if c.RuntimeNeedBytes > 0 {
			pf("  the runtime asks for %s whatever the range touched\n", format.Bytes(c.RuntimeNeedBytes))
		}
		pf("  request %s, limit %s (confidence %s: %s, %d samples)\n", format.Bytes(c.RequestBytes), format.Bytes(c.LimitBytes), c.Confidence.Level, c.Confidence.Why, c.Confidence.Samples)
		for _, s := range c.Settings {
			was := ""
			if s.Was != "" && s.Was != s.Value {
				was = " (now " + s.Was + ")"
			}
			who := s.Runtime
			if s.PID > 0 {
				who = fmt.Sprintf("%s pid %d %s", s.Runtime, s.PID, s.Comm)
			}
			pf("  %s: %s=%s%s: %s\n", who, s.Name, s.Value, was, s.Why)
		}
		pf("  common rule (max working set + 15%%) %s: %s\n", format.Bytes(c.Common.LimitBytes), c.Common.Why)
		for _, n := range c.Notes {
			pf("  note: %s\n", n)
		}
	}
	for _, n := range r.Notes {
		pf("\nnote: %s\n", n)
	}
	return nil
}

// quantity writes bytes as a Kubernetes quantity in Mi.
func quantity(b int64) string { return fmt.Sprintf("%dMi", (b+(1<<20)-1)>>20) }

// yamlString is s as a YAML double-quoted scalar (JSON's escapes are
// YAML's).
func yamlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// RightsizeVPA prints the recommendations of the pods' containers in the
// shape of a VerticalPodAutoscaler's status.recommendation, one document
// per pod: target the request, upperBound the limit, lowerBound the
// unreclaimable p99. Containers that are not a pod's, and refused ones,
// are listed as comments.
func RightsizeVPA(w io.Writer, r *rightsize.Report) error {
	var b strings.Builder
	pods := map[[2]string][]rightsize.Recommendation{}
	var order [][2]string
	for _, c := range r.Items {
		if c.Pod == "" || c.Container == "" || c.Refused != "" {
			why := "not a pod's container"
			if c.Refused != "" {
				why = "refused: " + c.Refused
			}
			fmt.Fprintf(&b, "# %s: %s\n", c.Name, why)
			continue
		}
		k := [2]string{c.Namespace, c.Pod}
		if pods[k] == nil {
			order = append(order, k)
		}
		pods[k] = append(pods[k], c)
	}
	for _, k := range order {
		fmt.Fprintf(&b, "---\napiVersion: autoscaling.k8s.io/v1\nkind: VerticalPodAutoscaler\nmetadata:\n  name: %s\n  namespace: %s\n", yamlString(k[1]), yamlString(k[0]))
		b.WriteString("status:\n  recommendation:\n    containerRecommendations:\n")
		for _, c := range pods[k] {
			fmt.Fprintf(&b, "    - containerName: %s\n", yamlString(c.Container))
			fmt.Fprintf(&b, "      lowerBound:\n        memory: %s\n", quantity(c.UnreclaimableP99Bytes))
			fmt.Fprintf(&b, "      target:\n        memory: %s\n", quantity(c.RequestBytes))
			fmt.Fprintf(&b, "      uncappedTarget:\n        memory: %s\n", quantity(c.RequestBytes))
			fmt.Fprintf(&b, "      upperBound:\n        memory: %s\n", quantity(c.LimitBytes))
		}
	}
	// Names are in double quotes (JSON's escapes are YAML's): control
	// characters in them are written as \u escapes.
	_, err := w.Write(termsafe.JSON([]byte(b.String())))
	return err
}

// RightsizePatch prints, for each pod, the in-place resize of its
// containers' memory (Kubernetes 1.33+: the resize subresource), every
// name shell-quoted; a container that is not a pod's, or refused, is a
// comment saying why.
func RightsizePatch(w io.Writer, r *rightsize.Report) error {
	pf := func(format string, a ...any) { _, _ = termsafe.Fprintf(w, format, a...) }
	type res struct {
		Requests map[string]string `json:"requests"`
		Limits   map[string]string `json:"limits"`
	}
	type ctr struct {
		Name      string `json:"name"`
		Resources res    `json:"resources"`
	}
	pods := map[[2]string][]ctr{}
	var order [][2]string
	for _, c := range r.Items {
		if c.Refused != "" {
			pf("# %s: refused: %s\n", c.Name, c.Refused)
			continue
		}
		if c.Pod == "" || c.Container == "" {
			pf("# %s: not a pod's container: request %s, limit %s\n", c.Name, quantity(c.RequestBytes), quantity(c.LimitBytes))
			continue
		}
		k := [2]string{c.Namespace, c.Pod}
		if pods[k] == nil {
			order = append(order, k)
		}
		pods[k] = append(pods[k], ctr{Name: c.Container, Resources: res{Requests: map[string]string{"memory": quantity(c.RequestBytes)},
			Limits: map[string]string{"memory": quantity(c.LimitBytes)}}})
	}
	for _, k := range order {
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"containers": pods[k]}})
		if err != nil {
			return err
		}
		ns := ""
		if k[0] != "" {
			ns = " -n " + model.ShellArg(k[0])
		}
		pf("kubectl patch pod %s%s --subresource resize --patch %s\n", model.ShellArg(k[1]), ns, model.ShellQuote(string(patch)))
	}
	return nil
}
