package prom

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/prometheus/common/model"
)

// rangeSeries is one series of a range query's answer.
type rangeSeries struct {
	Metric model.Metric `json:"metric"`
	Values points       `json:"values"`
}

// points decodes [[t,"v"],...] directly: a range answer is mostly these
// pairs, and decoding each through reflection costs several times more.
// Anything it does not expect is left to the generic decoder.
type points []model.SamplePair

// UnmarshalJSON implements json.Unmarshaler.
func (p *points) UnmarshalJSON(b []byte) error {
	if out, ok := parsePairs(b); ok {
		*p = out
		return nil
	}
	var generic []model.SamplePair
	if err := json.Unmarshal(b, &generic); err != nil {
		return err
	}
	*p = generic
	return nil
}

func parsePairs(b []byte) ([]model.SamplePair, bool) {
	i := 0
	ws := func() {
		for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
			i++
		}
	}
	expect := func(c byte) bool {
		ws()
		if i < len(b) && b[i] == c {
			i++
			return true
		}
		return false
	}
	if !expect('[') {
		return nil, false
	}
	out := make([]model.SamplePair, 0, len(b)/24)
	if expect(']') {
		ws()
		return out, i == len(b)
	}
	for {
		if !expect('[') {
			return nil, false
		}
		ws()
		j := i
		for i < len(b) && (b[i] == '.' || b[i] == '-' || (b[i] >= '0' && b[i] <= '9')) { // as Prometheus writes them
			i++
		}
		t, ok := parseTime(b[j:i])
		if !ok || !expect(',') || !expect('"') {
			return nil, false
		}
		j = i
		for i < len(b) && b[i] != '"' && b[i] != '\\' {
			i++
		}
		if i >= len(b) || b[i] != '"' {
			return nil, false
		}
		v, err := strconv.ParseFloat(string(b[j:i]), 64)
		if err != nil {
			return nil, false
		}
		i++
		if !expect(']') {
			return nil, false
		}
		out = append(out, model.SamplePair{Timestamp: t, Value: model.SampleValue(v)})
		if expect(']') {
			ws()
			return out, i == len(b)
		}
		if !expect(',') {
			return nil, false
		}
	}
}

// parseTime reads seconds with up to millisecond decimals as model.Time
// does: the seconds times 1000 plus the first three decimals.
func parseTime(b []byte) (model.Time, bool) {
	sec, frac, dot := b, []byte(nil), false
	for k, c := range b {
		if c == '.' {
			sec, frac, dot = b[:k], b[k+1:], true
			break
		}
	}
	s, err := strconv.ParseInt(string(sec), 10, 64)
	if err != nil || (dot && len(frac) == 0) {
		return 0, false
	}
	var ms int64
	for k := range 3 {
		ms *= 10
		if k < len(frac) {
			if frac[k] < '0' || frac[k] > '9' {
				return 0, false
			}
			ms += int64(frac[k] - '0')
		}
	}
	for _, c := range frac {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	if s > math.MaxInt64/1000-1 || s < math.MinInt64/1000+1 {
		return 0, false
	}
	return model.Time(s*1000 + ms), true
}
