package main

import (
	"fmt"

	"github.com/memdoctor/memdoctor/preload"
	"github.com/spf13/cobra"
)

func newPreloadCmd() *cobra.Command {
	var (
		printPath bool
		cacheDir  string
	)
	cmd := &cobra.Command{
		Use:   "preload",
		Short: "Build the LD_PRELOAD library that trims glibc malloc's free memory",
		Long: `preload builds libmemdoctor_preload.so from the C sources inside memdoctor,
with this machine's C compiler, and prints how to use it. The build is cached
(per source and compiler version) in /var/cache/memdoctor for root, else in
$XDG_CACHE_HOME/memdoctor or ~/.cache/memdoctor; the compiler is $CC, cc, gcc
or clang.

Loaded into a glibc program, the library gives memory that malloc keeps in
its arenas back to the kernel with malloc_trim(0), and logs what that saved.
It does nothing until one of these is set:

  MEMDOCTOR_TRIM_INTERVAL=30s   trim every interval (ms, s, m, h)
  MEMDOCTOR_TRIM_FREED=1GiB     trim after this much was freed (B, KiB, MiB, GiB;
                                at least 4MiB: less is raised to 4MiB)
  MEMDOCTOR_STATS=PATH          JSON lines: every trim (RSS before/after,
                                mallinfo2, arenas), a summary every
                                MEMDOCTOR_STATS_INTERVAL (60s); %p in PATH is
                                the pid; PATH.request asks for malloc_info

A service running as another user needs read access to the library: use it
from /var/cache/memdoctor (build as root) or copy it somewhere readable.`,
		Example: `  LD_PRELOAD=$(memdoctor preload --print-path) MEMDOCTOR_TRIM_INTERVAL=30s ./server
  # systemd: systemctl edit search.service, then
  #   [Service]
  #   Environment=LD_PRELOAD=/var/cache/memdoctor/preload-.../libmemdoctor_preload.so
  #   Environment=MEMDOCTOR_TRIM_FREED=1GiB MEMDOCTOR_STATS=/var/log/search-trim.%p.jsonl
  memdoctor preload              # build, print the path and how to use it`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lib, err := preload.Build(cmd.Context(), preload.BuildOptions{CacheDir: cacheDir})
			if err != nil {
				return fmt.Errorf("building %s: %w", preload.LibName, err)
			}
			out := cmd.OutOrStdout()
			if printPath {
				_, err = fmt.Fprintln(out, lib)
				return err
			}
			_, err = fmt.Fprintf(out, `%s

Trim every 30 seconds, and log each trim:
  LD_PRELOAD=%[1]s \
    MEMDOCTOR_TRIM_INTERVAL=30s MEMDOCTOR_STATS=/tmp/trim.%%p.jsonl COMMAND

Trim after each GiB freed:
  LD_PRELOAD=%[1]s MEMDOCTOR_TRIM_FREED=1GiB COMMAND

Variables:
  MEMDOCTOR_TRIM_INTERVAL   trim period: 500ms, 30s, 5m, 1h (off by default)
  MEMDOCTOR_TRIM_FREED      trim after this many bytes freed: 64MiB, 1GiB (off; min 4MiB)
  MEMDOCTOR_STATS           file for JSON lines (trims, summaries); %%p = pid
  MEMDOCTOR_STATS_INTERVAL  summary period (60s; 0 = none)

Ask a running process for malloc_info (with MEMDOCTOR_STATS=PATH):
  echo info > PATH.request.tmp && mv PATH.request.tmp PATH.request
  # within about a second: PATH.malloc_info.xml, a line in PATH, request removed
  # "trim" instead of "info" also trims and logs the RSS it released
`, lib)
			return err
		},
	}
	cmd.Flags().BoolVar(&printPath, "print-path", false, "print only the library's path (for LD_PRELOAD=$(memdoctor preload --print-path))")
	cmd.Flags().StringVar(&cacheDir, "cache-dir", "", "build and keep the library in this `directory` (default: /var/cache/memdoctor for root, else ~/.cache/memdoctor)")
	return cmd
}
