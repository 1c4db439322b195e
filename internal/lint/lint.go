// Package lint checks configuration files for settings that waste memory
// or CPU, without running anything: today Kafka producer settings in Java
// .properties files, librdkafka configuration files and kafka-python source.
// Findings have the same shape as diagnose's (id, severity, subject,
// summary, evidence, remedies), so they render and gate (--fail-on) alike.
package lint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/memdoctor/memdoctor/internal/model"
	"github.com/memdoctor/memdoctor/internal/safeio"
	"github.com/memdoctor/memdoctor/internal/termsafe"
)

// Format is a configuration dialect.
type Format string

// Formats.
const (
	Java       Format = "java"       // Java client .properties
	Librdkafka Format = "librdkafka" // librdkafka key=value file
	Python     Format = "python"     // kafka-python source
)

// File is one parsed configuration file.
type File struct {
	Path     string
	Format   Format
	Settings []Setting
	// Sends counts producer.send( calls seen in Python source (0 for
	// other formats: a config file says nothing about how the code sends).
	Sends int
}

// librdkafkaOnly are keys only librdkafka knows: they tell its files from
// Java ones.
var librdkafkaOnly = []string{"batch.num.messages", "queue.buffering.max.ms", "queue.buffering.max.kbytes",
	"queue.buffering.max.messages", "message.max.bytes", "sticky.partitioning.linger.ms", "statistics.interval.ms", "debug"}

// Parse parses data as format; an empty format is detected from the name
// (.py is Python) and the keys (librdkafka-only keys make librdkafka, else
// Java).
func Parse(path string, data []byte, format Format) (*File, error) {
	f := &File{Path: path, Format: format}
	if f.Format == "" && strings.EqualFold(filepath.Ext(path), ".py") {
		f.Format = Python
	}
	if f.Format == Python {
		f.Settings = ParsePython(data)
		f.Sends = bytes.Count(data, []byte(".send("))
		return f, nil
	}
	if f.Format != "" && f.Format != Java && f.Format != Librdkafka {
		return nil, fmt.Errorf("format %q: want java, librdkafka or python", format)
	}
	s, err := ParseProperties(data, path)
	if err != nil {
		return nil, err
	}
	f.Settings = s
	if f.Format == "" {
		f.Format = Java
		for _, st := range s {
			for _, k := range librdkafkaOnly {
				if st.Key == k {
					f.Format = Librdkafka
				}
			}
		}
	}
	return f, nil
}

// Load reads and parses a file.
func Load(path string, format Format) (*File, error) {
	data, err := safeio.ReadFile(path, safeio.Config)
	if err != nil {
		return nil, err
	}
	return Parse(path, data, format)
}

// Options tune the checks.
type Options struct {
	// MessageBytes is the typical record size (key + value + headers) the
	// producer sends; 0 means 512 bytes, a typical log line or event.
	MessageBytes int64
}

// Lint runs every check on f.
func Lint(f *File, o Options) []model.Finding {
	if o.MessageBytes <= 0 {
		o.MessageBytes = DefaultMessageBytes
	}
	var out []model.Finding
	if fd, ok := kafkaProducerBatching(f, o); ok {
		out = append(out, fd)
	}
	return out
}

// Report is the result of linting several files.
type Report struct {
	Files    []FileInfo      `json:"files"`
	Findings []model.Finding `json:"findings"`
}

// FileInfo says how a file was read.
type FileInfo struct {
	Path       string `json:"path"`
	Format     Format `json:"format"`
	Recognised int    `json:"recognised_settings"`
}

// Add lints f and adds its findings to r.
func (r *Report) Add(f *File, o Options) {
	n := 0
	for _, s := range f.Settings {
		if _, ok := canonical(f.Format, s.Key); ok {
			n++
		}
	}
	r.Files = append(r.Files, FileInfo{Path: f.Path, Format: f.Format, Recognised: n})
	r.Findings = append(r.Findings, Lint(f, o)...)
}

// WriteJSON writes r as indented JSON (DEL and C1 characters in file names
// and values as \u escapes, which decode to the same strings).
func (r *Report) WriteJSON(w io.Writer) error {
	if r.Findings == nil {
		r.Findings = []model.Finding{}
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(termsafe.JSON(b), '\n'))
	return err
}
