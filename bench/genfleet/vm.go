package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/memdoctor/memdoctor/internal/fleettest"
)

// importVM sends the fleet to VictoriaMetrics at url through its JSON line
// import (/api/v1/import), one line for each series' whole history, in one
// streamed request: what its Prometheus text import takes from the
// OpenMetrics files, without the text and the rewriting of timestamps.
func importVM(f *fleettest.Fleet, url string) error {
	pr, pw := io.Pipe()
	go func() {
		bw := bufio.NewWriterSize(pw, 1<<20)
		var line []byte
		err := f.Stream(0, func(_, _ int, series []fleettest.Series) error {
			for _, s := range series {
				line = appendVMLine(line[:0], s)
				if _, err := bw.Write(line); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil {
			err = bw.Flush()
		}
		pw.CloseWithError(err)
	}()
	resp, err := http.Post(strings.TrimSuffix(url, "/")+"/api/v1/import", "application/json", pr)
	_ = pr.CloseWithError(io.ErrClosedPipe) // stops the writer if the request ended early
	if err != nil {
		return err
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("VictoriaMetrics import: %s: %s", resp.Status, msg)
	}
	return nil
}

// appendVMLine appends one series as a line of VictoriaMetrics' JSON
// import: its labels, its values, and its times in milliseconds.
func appendVMLine(b []byte, s fleettest.Series) []byte {
	b = append(b, `{"metric":{"__name__":`...)
	b = appendJSONString(b, s.Name)
	for _, l := range s.Labels {
		b = append(b, ',')
		b = appendJSONString(b, l.Name)
		b = append(b, ':')
		b = appendJSONString(b, l.Value)
	}
	b = append(b, `},"values":[`...)
	for j, v := range s.V {
		if j > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, v, 'f', -1, 64)
	}
	b = append(b, `],"timestamps":[`...)
	for j, t := range s.T {
		if j > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, t, 10)
	}
	return append(b, "]}\n"...)
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}
