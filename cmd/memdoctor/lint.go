package main

import (
	"fmt"

	"github.com/memdoctor/memdoctor/internal/lint"
	"github.com/memdoctor/memdoctor/internal/render/text"
	"github.com/memdoctor/memdoctor/internal/usecase/live"
	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newLintCmd) }

func newLintCmd() *cobra.Command {
	var (
		asJSON   bool
		failOn   string
		format   string
		msgBytes int64
	)
	cmd := &cobra.Command{
		Use:   "lint FILE...",
		Short: "Check Kafka producer configs for settings that waste CPU and memory",
		Long: `lint reads configuration files without running anything and flags Kafka
producer settings that make every record its own request (rule
kafka_producer_batching): a batch.size (bytes!) smaller than a record, a
librdkafka batch.num.messages of 1, linger.ms 0. Each finding names the
file and line, explains the units and the CPU/memory effect, and gives the
corrected lines, each valid in the file's own syntax: a comment line of its
own says which line it replaces (or "add") and the old value, then the
setting (no trailing comment: Java properties and librdkafka would read it
as part of the value). Python lines are keyword arguments or, where the
file uses a dict, dict entries.

Recognised: Java client .properties files (comments, escapes, continuation
lines), librdkafka key=value files (linger.ms or queue.buffering.max.ms,
batch.size, batch.num.messages), and kafka-python source (.py): keyword
arguments batch_size=/linger_ms= and dict entries 'batch_size': ...,
with literal values or literal arithmetic (64 * 1024, 1 << 16). Values
held in variables are not judged. The format is detected from the
extension and the keys; --format forces one.`,
		Example: `  memdoctor lint producer.properties
  memdoctor lint --message-bytes 2000 app/logging/kafka_handler.py
  memdoctor lint --json rdkafka.conf | jq '.findings[].remedies[].commands'
  memdoctor lint --fail-on warning conf/*.properties   # exit 2 in CI`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			threshold, err := live.ParseFailOn(failOn)
			if err != nil {
				return err
			}
			if msgBytes < 0 {
				return fmt.Errorf("--message-bytes %d: want a record size in bytes", msgBytes)
			}
			var rep lint.Report
			for _, path := range args {
				f, err := lint.Load(path, lint.Format(format))
				if err != nil {
					return fmt.Errorf("%w (lint reads Java .properties, librdkafka key=value files and kafka-python .py files)", err)
				}
				rep.Add(f, lint.Options{MessageBytes: msgBytes})
			}
			out := cmd.OutOrStdout()
			if asJSON {
				err = rep.WriteJSON(out)
			} else {
				err = text.LintText(out, &rep)
			}
			if err != nil {
				return err
			}
			if live.Fails(rep.Findings, threshold) {
				return exitError{2}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the files read and the findings as JSON")
	cmd.Flags().StringVar(&failOn, "fail-on", "none", "exit with status 2 when a finding of this `severity` or worse is found (info, warning, critical)")
	cmd.Flags().StringVar(&format, "format", "", "read every file as java, librdkafka or python (default: detect)")
	cmd.Flags().Int64Var(&msgBytes, "message-bytes", lint.DefaultMessageBytes, "typical record size in bytes (key + value + headers) the producer sends")
	return cmd
}
