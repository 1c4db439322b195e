package record

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/model"
)

// ChildPage renders the report of a recording so far, for record --listen,
// in a child process (memdoctor report --from DB): reading a month of
// samples takes far more memory than recording does, and the child gives
// it all back when it exits, so the recorder stays small.
func ChildPage(db string, refresh time.Duration) func(w io.Writer, instance string) error {
	return func(w io.Writer, instance string) error {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding the memdoctor binary to render the page: %w", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c := exec.CommandContext(ctx, exe, "report", "--from", db, "--instance", instance, "--refresh", refresh.String(), "-o", "-")
		var stderr bytes.Buffer
		c.Stdout, c.Stderr = w, &stderr
		err = c.Run()
		_ = dropExecutableCache() // a hint: the page is served either way
		if err != nil {
			msg := strings.TrimSpace(stderr.String())
			if msg == "" {
				msg = err.Error()
			}
			return errors.New(msg)
		}
		return nil
	}
}

// ChildFindings diagnoses the recording in db as `memdoctor diagnose --json`
// does, in a child process (the recorder's own heap stays small whatever
// the recording's length), and returns the findings.
func ChildFindings(db string) func(ctx context.Context, instance string) ([]model.Finding, error) {
	return func(ctx context.Context, instance string) ([]model.Finding, error) {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("finding the memdoctor binary: %w", err)
		}
		c := exec.CommandContext(ctx, exe, "diagnose", "--from", db, "--instance", instance, "--json")
		var stdout, stderr bytes.Buffer
		c.Stdout, c.Stderr = &stdout, &stderr
		err = c.Run()
		_ = dropExecutableCache() // a hint: the findings are read either way
		if err != nil {
			msg := strings.TrimSpace(stderr.String())
			if msg == "" {
				msg = err.Error()
			}
			return nil, errors.New(msg)
		}
		var out struct {
			Findings []model.Finding `json:"findings"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
			return nil, fmt.Errorf("reading the diagnosis: %w", err)
		}
		return out.Findings, nil
	}
}
