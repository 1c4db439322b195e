package procfs

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"
)

// The kernel lab's /dev/kmsg after a process outgrew a cgroup's
// memory.max of 64M (Debian 6.1, testdata/kmsg-oom-memcg-6.1.txt, written
// by lab/oom_test.go with MEMDOCTOR_LAB_KMSG).
func TestParseOOMReportsLab61(t *testing.T) {
	data, err := os.ReadFile("testdata/kmsg-oom-memcg-6.1.txt")
	if err != nil {
		t.Fatal(err)
	}
	reps := ParseOOMReports(data)
	if len(reps) != 1 {
		t.Fatalf("%d reports, want 1", len(reps))
	}
	r := reps[0]
	if r.Task != "hog" || r.MemCG != "/oomtest" || r.TaskMemCG != "/oomtest" || r.Constraint != "CONSTRAINT_MEMCG" ||
		r.LimitKB != 65536 || r.UsageKB != 65536 || r.PID <= 1 || r.UID != 0 || r.TimeUsec <= 0 {
		t.Errorf("report %+v", r)
	}
	if r.AnonRSSKB < 32<<10 || r.RSSKB() != r.AnonRSSKB+r.FileRSSKB+r.ShmemRSSKB || r.TotalVMKB < r.AnonRSSKB {
		t.Errorf("sizes %+v", r)
	}
}

// dmesg's format, a host-wide kill (no cgroup limit), a comm with spaces
// and parentheses, dictionary lines and junk around them.
func TestParseOOMReportsForms(t *testing.T) {
	in := strings.Join([]string{
		"[ 100.000001] memory: usage 1024kB, limit 2048kB, failcnt 3",
		"[ 100.5] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/a,task_memcg=/a/b,task=w (x) y,pid=42,uid=1000",
		"[ 100.6] Memory cgroup out of memory: Killed process 42 (w (x) y) total-vm:9000kB, anon-rss:2000kB, file-rss:16kB, shmem-rss:0kB, UID:1000 pgtables:40kB oom_score_adj:0",
		" SUBSYSTEM=memory",
		"6,900,200000000,-;oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/system.slice/db.service,task=postgres,pid=7,uid=26",
		"3,901,200000100,-;Out of memory: Killed process 7 (postgres) total-vm:123kB, anon-rss:100kB, file-rss:zzkB, shmem-rss:5kB, UID:26",
		"4,902,1,-;Killed process 8 (not a report)",
		"garbage;;;,,,",
	}, "\n")
	reps := ParseOOMReports([]byte(in))
	if len(reps) != 2 {
		t.Fatalf("%d reports: %+v", len(reps), reps)
	}
	a, b := reps[0], reps[1]
	if a.TimeUsec != 100500000 || a.Task != "w (x) y" || a.PID != 42 || a.UID != 1000 || a.MemCG != "/a" || a.TaskMemCG != "/a/b" ||
		a.LimitKB != 2048 || a.UsageKB != 1024 || a.AnonRSSKB != 2000 || a.FileRSSKB != 16 || a.RSSKB() != 2016 {
		t.Errorf("memcg kill %+v", a)
	}
	if b.TimeUsec != 200000000 || b.Constraint != "CONSTRAINT_NONE" || b.MemCG != "" || b.Task != "postgres" || b.PID != 7 ||
		b.LimitKB != -1 || b.AnonRSSKB != 100 || b.FileRSSKB != -1 || b.RSSKB() != 105 {
		t.Errorf("host kill %+v", b)
	}
}

// The log is untrusted text: nothing panics, fields stay bounded, at most
// maxOOMReports come back.
func FuzzParseOOMReports(f *testing.F) {
	if b, err := os.ReadFile("testdata/kmsg-oom-memcg-6.1.txt"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("oom-kill:task=a,pid=1\nKilled process 1 (a) anon-rss:1kB\n"))
	f.Add([]byte("[ 1.0] memory: usage 1kB, limit 2kB\n6,1,2,-;oom-kill:\n"))
	f.Add([]byte(strings.Repeat("oom-kill:pid=1\n", 100)))
	f.Fuzz(func(t *testing.T, data []byte) {
		reps := ParseOOMReports(data)
		if len(reps) > maxOOMReports {
			t.Fatalf("%d reports", len(reps))
		}
		for _, r := range reps {
			if len(r.Task) > maxOOMFieldLen || len(r.MemCG) > maxOOMFieldLen || len(r.TaskMemCG) > maxOOMFieldLen || len(r.Constraint) > maxOOMFieldLen {
				t.Fatalf("unbounded field: %+v", r)
			}
			if r.RSSKB() < -1 {
				t.Fatalf("RSS %d", r.RSSKB())
			}
		}
		// The records ReadKmsg keeps (OOMRecord) read the same reports.
		var kept []byte
		for _, l := range bytes.SplitAfter(data, []byte("\n")) {
			// Every line whose text ParseOOMReports would read is kept
			// (the reports' sameness alone would not show it: the parser
			// skips what OOMRecord does not keep).
			_, text := kmsgText(string(bytes.TrimSuffix(l, []byte("\n"))))
			if (strings.HasPrefix(text, "oom-kill:") || strings.HasPrefix(text, "memory: usage ") ||
				strings.Contains(text, "Killed process ")) && !OOMRecord(l) {
				t.Fatalf("OOMRecord dropped %q (text %q)", l, text)
			}
			if OOMRecord(l) {
				kept = append(kept, l...)
			}
		}
		if k := ParseOOMReports(kept); !reflect.DeepEqual(k, reps) {
			t.Fatalf("kept records read %+v, the whole log %+v", k, reps)
		}
	})
}

// OOMRecord over a real log (the kernel lab's, with an OOM kill in it),
// against looking for each of the three marks anywhere in each record.
func BenchmarkOOMRecord(b *testing.B) {
	data, err := os.ReadFile("testdata/kmsg-oom-memcg-6.1.txt")
	if err != nil {
		b.Fatal(err)
	}
	recs := bytes.SplitAfter(data, []byte("\n"))
	anywhere := func(rec []byte) bool {
		return bytes.Contains(rec, []byte("oom-kill:")) || bytes.Contains(rec, []byte("Killed process ")) ||
			bytes.Contains(rec, []byte("memory: usage "))
	}
	for name, f := range map[string]func([]byte) bool{"at-text": OOMRecord, "anywhere": anywhere} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				for _, r := range recs {
					f(r)
				}
			}
		})
	}
}
