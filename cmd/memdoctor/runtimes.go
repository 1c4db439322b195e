package main

import (
	"time"

	"github.com/memdoctor/memdoctor/internal/usecase/live"
	"github.com/spf13/cobra"
)

// runtimeFlags select the language runtimes check and record read besides
// the JVMs they find by themselves.
type runtimeFlags struct {
	live.Runtimes
}

func (f *runtimeFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.URLs, "scrape", nil, "read a service's runtime GC metrics from its Prometheus `URL` (repeatable; Go, Python, JVM, .NET, Ruby and Node client names)")
	cmd.Flags().BoolVar(&f.Discover, "discover", true, "read the /metrics a detected Go, Python, Ruby, Node or .NET process serves on its own loopback ports (false: --scrape URLs only; see docs/runtimes/discovery.md)")
	cmd.Flags().DurationVar(&f.Timeout, "scrape-timeout", 5*time.Second, "time limit of each scrape")
	cmd.Flags().StringVar(&f.TokenFile, "scrape-token-file", "", "send the bearer token in `FILE` with every scrape")
	cmd.Flags().StringVar(&f.User, "scrape-user", "", "basic-auth `USER` for every scrape (password from --scrape-password-file)")
	cmd.Flags().StringVar(&f.PasswordFile, "scrape-password-file", "", "basic-auth password for every scrape, read from `FILE`")
	if cmd.Name() == "check" {
		cmd.Flags().DurationVar(&f.Interval, "gc-interval", 3*time.Second, "read runtimes twice this far apart to measure GC rates (0: once, lifetime averages only)")
	}
}
