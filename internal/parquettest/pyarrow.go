// Package parquettest reads Parquet files with pyarrow, a reader written
// independently of ours and of parquet-go, for the tests of the writer and
// of the store's export.
package parquettest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Python is the venv scripts/install-test-deps.sh makes with pyarrow.
const Python = "/opt/memdoctor-test/pyarrow/bin/python"

// Column is one column as pyarrow reads it. Values holds, a row each,
// strings and integers (timestamps as milliseconds) as they are; doubles
// as their IEEE 754 bits, so that NaN and -0 compare exactly.
type Column struct {
	Name     string
	Physical string // pyarrow's physical type: BYTE_ARRAY, INT64, DOUBLE
	Logical  string // pyarrow's logical type, e.g. String or Timestamp(...)
	Arrow    string // the Arrow type pyarrow maps the column to
	Strings  []string
	Ints     []int64
	Bits     []uint64
}

// Chunk is one column chunk's footer statistics as pyarrow reads them.
type Chunk struct {
	Column    string
	HasMinMax bool
	Min, Max  string // pyarrow's str() of the values
	Nulls     int64
}

// File is a whole file as pyarrow reads it.
type File struct {
	Rows      int64
	RowGroups int
	CreatedBy string
	Columns   []Column
	Chunks    [][]Chunk // by row group
}

// script reads the file named by argv[1] with pyarrow.parquet and prints
// it as JSON (strings in base64, so any bytes survive).
const script = `
import base64, json, struct, sys
import pyarrow as pa, pyarrow.parquet as pq
f = pq.ParquetFile(sys.argv[1])
t = f.read()
md = f.metadata
out = {"Rows": md.num_rows, "RowGroups": md.num_row_groups, "CreatedBy": md.created_by, "Columns": [], "Chunks": []}
for i, field in enumerate(t.schema):
    col = t.column(i)
    pc = f.schema.column(i)
    c = {"Name": field.name, "Physical": pc.physical_type, "Logical": str(pc.logical_type), "Arrow": str(field.type)}
    if pa.types.is_string(field.type):
        c["Strings"] = [base64.b64encode(v.encode("utf-8", "surrogateescape")).decode() for v in col.to_pylist()]
    elif pa.types.is_timestamp(field.type) or pa.types.is_integer(field.type):
        c["Ints"] = col.cast(pa.int64()).to_pylist()
    elif pa.types.is_floating(field.type):
        c["Bits"] = [struct.unpack("<Q", struct.pack("<d", v))[0] for v in col.to_pylist()]
    out["Columns"].append(c)
for g in range(md.num_row_groups):
    rg = md.row_group(g)
    cs = []
    for i in range(rg.num_columns):
        cc = rg.column(i)
        s = cc.statistics
        ch = {"Column": cc.path_in_schema, "HasMinMax": bool(s is not None and s.has_min_max), "Nulls": s.null_count if s is not None else -1}
        if ch["HasMinMax"]:
            ch["Min"], ch["Max"] = str(s.min), str(s.max)
        cs.append(ch)
    out["Chunks"].append(cs)
json.dump(out, sys.stdout)
`

// Read reads data with pyarrow. Without the venv it skips the test, or
// fails it under CI, where scripts/install-test-deps.sh has run.
func Read(t testing.TB, data []byte) File {
	t.Helper()
	if _, err := os.Stat(Python); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("pyarrow is missing under CI (%v): scripts/install-test-deps.sh installs it", err)
		}
		t.Skipf("pyarrow not installed (%v): run scripts/install-test-deps.sh as root", err)
	}
	path := filepath.Join(t.TempDir(), "read.parquet")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(Python, "-c", script, path)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("pyarrow cannot read the file: %v\n%s", err, stderr.Bytes())
	}
	var f File
	if err := json.Unmarshal(stdout.Bytes(), &f); err != nil {
		t.Fatalf("pyarrow's answer: %v", err)
	}
	for i := range f.Columns {
		for j, s := range f.Columns[i].Strings {
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				t.Fatalf("pyarrow's answer: %v", err)
			}
			f.Columns[i].Strings[j] = string(b)
		}
	}
	return f
}
