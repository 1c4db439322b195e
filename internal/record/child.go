package record

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
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
