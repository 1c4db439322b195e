package runtimes

// Scraping an application's Prometheus endpoint: one GET asking for the
// text format (every client library serves it; OpenMetrics pages parse too,
// their "# EOF" being a comment to the text parser), a timeout, a size
// bound, and errors that say what to check.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memdoctor/memdoctor/internal/httpsafe"
	"github.com/memdoctor/memdoctor/internal/redact"
)

// maxPage bounds a scraped page (a runtime's page is a few KiB to a few MiB).
const maxPage = 32 << 20

// Scraper reads Prometheus endpoints.
type Scraper struct {
	Client  *http.Client
	Timeout time.Duration
	Auth    Auth
	// MaxPage bounds the page (0: 32 MiB).
	MaxPage int64
	// NoRedirects answers a redirect with an error instead of following
	// it (even to the same host).
	NoRedirects bool
	// UserAgent, when set, names the asker to the service.
	UserAgent string
	// RuntimeOnly parses only the series of runtimes (the names Normalize
	// reads), leaving an application's own, however many, unparsed.
	RuntimeOnly bool
}

// Auth is what a scrape sends to be let in, read from files so that no
// secret stands in a command line (which every user of the host can read)
// or in a URL (which memdoctor stores, redacted).
type Auth struct {
	BearerToken string
	Username    string
	Password    string
}

func (a Auth) apply(req *http.Request) {
	switch {
	case a.BearerToken != "":
		req.Header.Set("Authorization", "Bearer "+a.BearerToken)
	case a.Username != "" && req.URL.User == nil:
		req.SetBasicAuth(a.Username, a.Password)
	}
}

// ValidateURL checks a --scrape argument before anything is read.
func ValidateURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		if !strings.Contains(raw, "://") {
			return fmt.Errorf("--scrape %q: no scheme: write http://%s", redact.URL(raw), redact.URL(raw))
		}
		return fmt.Errorf("--scrape %q: want an http(s) URL such as http://127.0.0.1:8080/metrics", redact.URL(raw))
	}
	return nil
}

// Fetch scrapes one URL and parses the page.
func (s Scraper) Fetch(ctx context.Context, raw string) (Page, error) {
	if err := ValidateURL(raw); err != nil {
		return nil, err
	}
	shown := redact.URL(raw) // errors name the URL without its secrets
	to := s.Timeout
	if to <= 0 {
		to = 5 * time.Second
	}
	cl := httpsafe.Client(s.Client) // redirects only to the same scheme and host
	if s.NoRedirects {
		cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	limit := s.MaxPage
	if limit <= 0 {
		limit = maxPage
	}
	ctx, cancel := context.WithTimeout(ctx, to)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", shown, redact.Err(err))
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4;q=1,application/openmetrics-text;version=1.0.0;q=0.5,*/*;q=0.1")
	if s.UserAgent != "" {
		req.Header.Set("User-Agent", s.UserAgent)
	}
	s.Auth.apply(req)
	resp, err := cl.Do(req)
	if err != nil {
		err = redact.Err(err) // net/http names the URL with its query
		if errors.Is(err, httpsafe.ErrRedirect) {
			return nil, fmt.Errorf("scrape %s: %w (scrape the URL it redirects to, if that is the service meant)", shown, errors.Unwrap(err))
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("scrape %s: no answer within %v (is the service overloaded, or the port wrong?)", shown, to)
		}
		return nil, fmt.Errorf("scrape %s: %w (is the service running and listening there?)", shown, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if s.NoRedirects && resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return nil, fmt.Errorf("scrape %s: HTTP %s: a redirect, not followed", shown, status(resp))
	}
	if resp.StatusCode != http.StatusOK {
		hint := "check the path: usually /metrics"
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			hint = "the service wants credentials: --scrape-token-file, or --scrape-user with --scrape-password-file"
		}
		return nil, fmt.Errorf("scrape %s: HTTP %s (%s)", shown, status(resp), hint)
	}
	var body []byte
	if s.RuntimeOnly {
		body, err = readRuntimeSeries(resp.Body, limit, maxRuntimeSeries)
	} else {
		body, err = io.ReadAll(io.LimitReader(resp.Body, limit+1))
		if int64(len(body)) > limit {
			err = errPageLarge
		}
	}
	switch {
	case errors.Is(err, errPageLarge):
		return nil, fmt.Errorf("scrape %s: page larger than %d MiB: not a runtime's metrics page?", shown, limit>>20)
	case errors.Is(err, errSeriesLarge):
		return nil, fmt.Errorf("scrape %s: runtime series larger than %d MiB: not a runtime's metrics page?", shown, maxRuntimeSeries>>20)
	case errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("scrape %s: the page did not end within %v", shown, to)
	case err != nil:
		return nil, fmt.Errorf("scrape %s: reading the page: %w", shown, redact.Err(err))
	}
	if ct := resp.Header.Get("Content-Type"); strings.Contains(ct, "protobuf") {
		return nil, fmt.Errorf("scrape %s: the server answered in protobuf (%s) despite asking for text", shown, ct)
	}
	fams, err := ParsePage(body)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", shown, err)
	}
	return fams, nil
}

// runtimePrefixes begin every name Normalize reads.
var runtimePrefixes = [][]byte{[]byte("go_"), []byte("jvm_"), []byte("dotnet_"), []byte("nodejs_"), []byte("process_"),
	[]byte("python_"), []byte("ruby_"), []byte("system_runtime_")}

// status is the answer's status code and its standard text: the server's
// own reason phrase, any length and any bytes, is not repeated.
func status(resp *http.Response) string {
	return strings.TrimSpace(fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode)))
}

// maxRuntimeSeries bounds the runtime's series kept of a page (a
// runtime's own are tens of KiB).
const maxRuntimeSeries = 1 << 20

var (
	errPageLarge   = errors.New("page too large")
	errSeriesLarge = errors.New("runtime series too large")
)

// readRuntimeSeries reads a text page of at most limit bytes and keeps
// only the lines that describe or sample a runtime's series (and comments
// of fewer than three words, such as OpenMetrics' "# EOF"), at most keep
// bytes of them: what is held is what is kept, not the page. A line longer
// than 64 KiB is dropped.
func readRuntimeSeries(r io.Reader, limit, keep int64) ([]byte, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, limit+1), 64<<10)
	var out []byte
	var read int64
	long := false // within a line longer than the buffer
	for {
		line, err := br.ReadSlice('\n')
		read += int64(len(line))
		if read > limit {
			return nil, errPageLarge
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			long = true
			continue
		}
		if long {
			long = false
		} else if len(line) > 0 && runtimeLine(line) {
			if int64(len(out)+len(line)) > keep {
				return nil, errSeriesLarge
			}
			out = append(out, line...)
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// runtimeLine says whether a page's line is kept by readRuntimeSeries.
func runtimeLine(line []byte) bool {
	name := line
	if bytes.HasPrefix(line, []byte("#")) {
		var ok bool
		if name, ok = thirdWord(line); !ok {
			return true
		}
	}
	for _, p := range runtimePrefixes {
		if bytes.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// thirdWord returns the third of line's words as bytes.Fields splits them
// ("# HELP name ..."), without the slice of all of them that Fields makes
// for each comment line of every page check scrapes; false when line has
// fewer. A byte outside ASCII before its end leaves it to Fields (Unicode
// spaces).
func thirdWord(line []byte) ([]byte, bool) {
	i := 0
	for k := 0; k < 3; k++ {
		for i < len(line) && asciiSpace(line[i]) {
			i++
		}
		start := i
		for i < len(line) && !asciiSpace(line[i]) {
			if line[i] >= utf8.RuneSelf {
				if f := bytes.Fields(line); len(f) >= 3 {
					return f[2], true
				}
				return nil, false
			}
			i++
		}
		if start == i {
			return nil, false
		}
		if k == 2 {
			return line[start:i], true
		}
	}
	return nil, false
}

func asciiSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// runtimeSeries is readRuntimeSeries of a page held whole.
func runtimeSeries(body []byte) []byte {
	out, _ := readRuntimeSeries(bytes.NewReader(body), int64(len(body)), int64(len(body)))
	return out
}
