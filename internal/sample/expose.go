package sample

import (
	"bufio"
	"io"
	"math"
	"strconv"
)

// WriteText writes scrapes in the Prometheus text exposition format (0.0.4):
// one family per name, with HELP and TYPE from Describe, families in order
// of first appearance. Metrics of the same name must have distinct labels.
func WriteText(w io.Writer, snapshots ...*Snapshot) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	var order []string
	fams := map[string][]Metric{}
	for _, s := range snapshots {
		for _, m := range s.Metrics {
			if _, ok := fams[m.Name]; !ok {
				order = append(order, m.Name)
			}
			fams[m.Name] = append(fams[m.Name], m)
		}
	}
	for _, name := range order {
		d := Describe(name)
		bw.WriteString("# HELP ")
		bw.WriteString(name)
		bw.WriteByte(' ')
		bw.WriteString(escapeHelp(d.Help))
		bw.WriteString("\n# TYPE ")
		bw.WriteString(name)
		bw.WriteByte(' ')
		bw.WriteString(kindName(d.Kind))
		bw.WriteByte('\n')
		for _, m := range fams[name] {
			bw.WriteString(name)
			bw.WriteString(m.Labels.String())
			bw.WriteByte(' ')
			bw.WriteString(formatValue(m.Value))
			bw.WriteByte('\n')
		}
	}
	return bw.Flush()
}

func kindName(k Kind) string {
	switch k {
	case Counter:
		return "counter"
	case Gauge:
		return "gauge"
	}
	return "untyped"
}

func formatValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func escapeHelp(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			out = append(out, '\\', '\\')
		case '\n':
			out = append(out, '\\', 'n')
		default:
			out = append(out, s[i])
		}
	}
	return string(out)
}
