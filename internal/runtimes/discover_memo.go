package runtimes

import (
	"strconv"
	"strings"
	"sync"
	"time"
)

// DiscoverMemo carries discovery's answers from one reading to the next,
// for the recorder, which reads every interval: a process whose loopback
// ports served its runtime's page is asked at that URL only, and one whose
// ports served nothing is asked again only after Retry. Without it every
// sample would ask every silent port again, up to discovery's whole budget
// (2 s) a sample: more than a 1 s interval. A process is known by its pid
// and the ports it listens on, so a new listener is asked at once.
type DiscoverMemo struct {
	// Retry is how long a process whose ports served nothing is left
	// alone (10 minutes when 0).
	Retry time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu     sync.Mutex
	found  map[string]string    // key → the URL that served the page
	silent map[string]time.Time // key → when its ports last served nothing
}

// maxMemo bounds the memo: past it, the oldest half of the silent entries
// and every found one are forgotten (they are asked again).
const maxMemo = 4096

func memoKey(pid int, urls []string) string {
	return strconv.Itoa(pid) + " " + strings.Join(urls, " ")
}

func (m *DiscoverMemo) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *DiscoverMemo) retry() time.Duration {
	if m.Retry > 0 {
		return m.Retry
	}
	return 10 * time.Minute
}

// plan returns the URLs to ask for a process listening at urls: the one
// that served it last time, none while it is left alone (with why), or
// all of them.
func (m *DiscoverMemo) plan(pid int, urls []string) (ask []string, why string) {
	if m == nil {
		return urls, ""
	}
	k := memoKey(pid, urls)
	m.mu.Lock()
	defer m.mu.Unlock()
	if u, ok := m.found[k]; ok {
		return []string{u}, ""
	}
	if at, ok := m.silent[k]; ok {
		if wait := m.retry() - m.now().Sub(at); wait > 0 {
			return nil, "its loopback ports (" + strings.Join(urls, ", ") + ") served no /metrics of its runtime when last asked, " +
				at.UTC().Format("15:04:05") + " UTC; asked again every " + m.retry().String()
		}
	}
	return urls, ""
}

// keep records what asking a process listening at urls gave: the URL of
// its page, or "" for nothing.
func (m *DiscoverMemo) keep(pid int, urls []string, served string) {
	if m == nil {
		return
	}
	k := memoKey(pid, urls)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.found == nil {
		m.found, m.silent = map[string]string{}, map[string]time.Time{}
	}
	if len(m.found)+len(m.silent) >= maxMemo {
		m.found = map[string]string{}
		cut := m.now().Add(-m.retry() / 2)
		for k, at := range m.silent {
			if at.Before(cut) {
				delete(m.silent, k)
			}
		}
		if len(m.silent) >= maxMemo/2 {
			m.silent = map[string]time.Time{}
		}
	}
	delete(m.found, k)
	delete(m.silent, k)
	if served != "" {
		m.found[k] = served
	} else {
		m.silent[k] = m.now()
	}
}
