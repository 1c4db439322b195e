package store

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/sample"
)

// The crash child: appends snapshots to the store named by the environment
// in a loop, as the recorder does (and now and then a batch, as ingest
// does), printing the time of every snapshot whose Append returned.
const crashEnv = "MEMDOCTOR_STORE_CRASH_CHILD"

func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("the child of TestCrashSafety")
	}
	st, err := Open(path, Options{ChunkRange: time.Minute})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	start := t0
	if _, to, err := st.TimeRange("h"); err == nil {
		start = to.Add(time.Second)
	} else if !errors.Is(err, ErrNoData) {
		fmt.Println("time range:", err)
		os.Exit(2)
	}
	sm := newSim(captureSnapshot(t, "healthy-6.18-x86_64-hybrid.txtar"), start, time.Second, uint64(start.Unix()))
	for i := 0; ; i++ {
		n := 1
		if i%10 == 9 {
			n = 30 // crosses a chunk boundary: cut and head rows in one transaction
		}
		scs := make([]*sample.Snapshot, n)
		for j := range scs {
			scs[j] = sm.next()
			scs[j].Add("crash_seq", float64(scs[j].Time.UnixMilli()))
		}
		if err := st.Append("h", scs...); err != nil {
			fmt.Println("append:", err)
			os.Exit(2)
		}
		for _, sc := range scs {
			fmt.Println("committed", sc.Time.UnixMilli())
		}
	}
}

// TestCrashSafety kills the appending child with SIGKILL at random moments,
// several times, then checks that the store opens, passes SQLite's
// integrity check, and holds every snapshot the child reported committed.
func TestCrashSafety(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("kills child processes for several seconds")
	}
	path := t.TempDir() + "/crash.db"
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	committed := map[int64]bool{}
	unreported := 0 // stored snapshots never reported, over the rounds so far
	for round := range 6 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnv+"="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var lines []string
		done, started := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				mu.Lock()
				if len(lines) == 0 {
					close(started)
				}
				lines = append(lines, sc.Text())
				mu.Unlock()
			}
		}()
		select {
		case <-started:
		case <-done:
			t.Fatalf("round %d: the child exited before its first append", round)
		case <-time.After(2 * time.Minute):
			t.Fatalf("round %d: no append within 2 minutes", round)
		}
		// Kill after a random time, somewhere inside an append most of the
		// time (an append of 2000 series takes a millisecond or more).
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-done
		_ = cmd.Wait()
		n := 0
		for _, l := range lines {
			var ms int64
			if _, err := fmt.Sscanf(l, "committed %d", &ms); err != nil {
				t.Fatalf("round %d: child said %q", round, l)
			}
			committed[ms] = true
			n++
		}
		if n == 0 {
			t.Fatalf("round %d: the child committed nothing before the kill", round)
		}
		t.Logf("round %d: killed after %d committed scrapes", round, n)
		extra := checkCrashStore(t, path, committed)
		// The kill may land after a commit but before its lines were
		// printed: that one append (at most a batch of 30) is stored
		// without a report.
		if extra-unreported > 30 {
			t.Errorf("round %d: %d stored scrapes were never reported: more than the one append in flight", round, extra-unreported)
		}
		unreported = extra
	}
}

// checkCrashStore checks the store after a kill and returns how many stored
// snapshots were never reported committed.
func checkCrashStore(t *testing.T, path string, committed map[int64]bool) int {
	t.Helper()
	st, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("Open after kill -9: %v", err)
	}
	defer st.Close()
	if err := st.Check(); err != nil {
		t.Fatalf("integrity after kill -9: %v", err)
	}
	got, err := st.Select(Query{Instance: "h", Names: []string{"crash_seq"}})
	if err != nil {
		t.Fatal(err)
	}
	present := map[int64]bool{}
	extra := 0
	if len(got) == 1 {
		for _, p := range got[0].Points {
			if p.V != float64(p.T) {
				t.Errorf("sample at %d holds %v", p.T, p.V)
			}
			present[p.T] = true
			if !committed[p.T] {
				extra++
			}
		}
	}
	for ms := range committed {
		if !present[ms] {
			t.Errorf("scrape at %s was reported committed but is missing", strconv.FormatInt(ms, 10))
		}
	}
	// All series of a snapshot went in together.
	all, err := st.Select(Query{Instance: "h", Names: []string{"node_memory_MemFree_bytes", "node_vmstat_pgfault"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		if len(s.Points) != len(present) {
			t.Errorf("%s has %d samples, crash_seq %d: a scrape was stored in part", s.Name, len(s.Points), len(present))
		}
	}
	return extra
}
