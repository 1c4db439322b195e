package main

// A real browser for the report tests: Debian's chromium, headless, driven
// over the DevTools protocol with a minimal WebSocket client (text frames,
// client masking, fragmentation, ping). It loads a page, collects every
// console error, uncaught exception and browser log error (failed loads,
// blocked content), evaluates checks in the page, and saves screenshots and
// a printed PDF under the artifacts directory.

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	be "encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// artifactsDir is where tests leave what a person may want to look at
// (screenshots, printed PDFs): $MEMDOCTOR_TEST_ARTIFACTS, else testdata/out
// in the repository (ignored by git); one directory per test.
func artifactsDir(t *testing.T) string {
	t.Helper()
	base := os.Getenv("MEMDOCTOR_TEST_ARTIFACTS")
	if base == "" {
		base = filepath.Join(repoRoot(t), "testdata", "out")
	}
	dir := filepath.Join(base, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

type browser struct {
	cmd  *exec.Cmd
	port string
}

// startBrowser runs headless chromium with a DevTools port, or skips when
// it is not installed (scripts/install-test-deps.sh installs it).
func startBrowser(t *testing.T) *browser {
	t.Helper()
	exe := ""
	for _, n := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(n); err == nil {
			exe = p
			break
		}
	}
	if exe == "" {
		t.Skip("chromium is not installed (apt-get install chromium, or run scripts/install-test-deps.sh)")
	}
	cmd := exec.Command(exe, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0",
		"--remote-debugging-address=127.0.0.1", "--user-data-dir="+t.TempDir(), "--no-first-run",
		"--disable-extensions", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-default-apps", "--hide-scrollbars", "about:blank")
	// Its own temporary files (org.chromium.Chromium.*) in a directory of
	// the test's: killed, chromium leaves them behind, in /tmp otherwise.
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	// Chromium's helpers (zygote, renderer, GPU) write into the profile
	// directory after the browser itself is gone: start it in a process
	// group of its own and end the whole group before the directory is
	// removed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	t.Cleanup(func() {
		pgid := cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		_ = cmd.Wait()
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if !groupAlive(pgid) {
				return
			}
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		t.Errorf("chromium's process group %d outlived 10 s after SIGKILL", pgid)
	})
	found := make(chan string, 1)
	var log strings.Builder
	go func() {
		re := regexp.MustCompile(`DevTools listening on ws://127\.0\.0\.1:(\d+)/`)
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			if !sent {
				log.WriteString(sc.Text() + "\n")
				if m := re.FindStringSubmatch(sc.Text()); m != nil {
					found <- m[1]
					sent = true
				}
			}
		}
		if !sent {
			close(found)
		}
	}()
	select {
	case port, ok := <-found:
		if !ok {
			t.Fatalf("chromium exited without a DevTools port:\n%s", log.String())
		}
		return &browser{cmd: cmd, port: port}
	case <-time.After(60 * time.Second):
		t.Fatal("chromium did not open its DevTools port within 60 s")
	}
	return nil
}

// page connects to the browser's first page target.
func (b *browser) page(t *testing.T) *devtools {
	t.Helper()
	resp, err := http.Get("http://127.0.0.1:" + b.port + "/json/list")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var targets []struct{ Type, WebSocketDebuggerURL string }
	if err := json.NewDecoder(resp.Body).Decode(&targets); err != nil {
		t.Fatal(err)
	}
	for _, tg := range targets {
		if tg.Type == "page" {
			d, err := dialDevtools(tg.WebSocketDebuggerURL)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = d.conn.Close() })
			for _, m := range []string{"Runtime.enable", "Log.enable", "Page.enable"} {
				d.call(t, m, nil)
			}
			return d
		}
	}
	t.Fatalf("no page target in %+v", targets)
	return nil
}

// devtools is one DevTools WebSocket session.
type devtools struct {
	conn   net.Conn
	r      *bufio.Reader
	id     int
	events []cdpMessage
	errs   []string
}

type cdpMessage struct {
	ID     int             `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func dialDevtools(wsURL string) (*devtools, error) {
	u, err := url.Parse(wsURL)
	if err != nil {
		return nil, err
	}
	conn, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
	if err != nil {
		return nil, err
	}
	keyb := make([]byte, 16)
	_, _ = rand.Read(keyb)
	key := base64.StdEncoding.EncodeToString(keyb)
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n",
		u.RequestURI(), u.Host, key)
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, &http.Request{Method: "GET"})
	if err != nil {
		conn.Close()
		return nil, err
	}
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		conn.Close()
		return nil, fmt.Errorf("websocket handshake: %s", resp.Status)
	}
	return &devtools{conn: conn, r: r}, nil
}

func (d *devtools) writeFrame(op byte, payload []byte) error {
	hdr := []byte{0x80 | op}
	switch n := len(payload); {
	case n < 126:
		hdr = append(hdr, 0x80|byte(n))
	case n < 1<<16:
		hdr = append(hdr, 0x80|126, byte(n>>8), byte(n))
	default:
		hdr = append(hdr, 0x80|127)
		hdr = be.BigEndian.AppendUint64(hdr, uint64(n))
	}
	mask := make([]byte, 4)
	_, _ = rand.Read(mask)
	hdr = append(hdr, mask...)
	masked := make([]byte, len(payload))
	for i, c := range payload {
		masked[i] = c ^ mask[i%4]
	}
	_, err := d.conn.Write(append(hdr, masked...))
	return err
}

// readMessage reads one whole text message, answering pings.
func (d *devtools) readMessage() ([]byte, error) {
	var msg []byte
	for {
		var h [2]byte
		if _, err := io.ReadFull(d.r, h[:]); err != nil {
			return nil, err
		}
		fin, op := h[0]&0x80 != 0, h[0]&0x0f
		n := uint64(h[1] & 0x7f)
		switch n {
		case 126:
			var b [2]byte
			if _, err := io.ReadFull(d.r, b[:]); err != nil {
				return nil, err
			}
			n = uint64(be.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			if _, err := io.ReadFull(d.r, b[:]); err != nil {
				return nil, err
			}
			n = be.BigEndian.Uint64(b[:])
		}
		var mask [4]byte
		if h[1]&0x80 != 0 {
			if _, err := io.ReadFull(d.r, mask[:]); err != nil {
				return nil, err
			}
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(d.r, payload); err != nil {
			return nil, err
		}
		if h[1]&0x80 != 0 {
			for i := range payload {
				payload[i] ^= mask[i%4]
			}
		}
		switch op {
		case 0x8:
			return nil, errors.New("the browser closed the DevTools connection")
		case 0x9:
			if err := d.writeFrame(0xA, payload); err != nil {
				return nil, err
			}
			continue
		case 0xA:
			continue
		}
		msg = append(msg, payload...)
		if fin {
			return msg, nil
		}
	}
}

// next reads one message within the deadline, recording events and the
// errors among them.
func (d *devtools) next(deadline time.Time) (cdpMessage, error) {
	_ = d.conn.SetReadDeadline(deadline)
	b, err := d.readMessage()
	if err != nil {
		return cdpMessage{}, err
	}
	var m cdpMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return cdpMessage{}, fmt.Errorf("devtools message %q: %w", b, err)
	}
	if m.Method != "" {
		d.events = append(d.events, m)
		d.noteError(m)
	}
	return m, nil
}

func (d *devtools) noteError(m cdpMessage) {
	switch m.Method {
	case "Runtime.consoleAPICalled":
		var p struct {
			Type string `json:"type"`
			Args []struct {
				Value       any    `json:"value"`
				Description string `json:"description"`
			} `json:"args"`
		}
		_ = json.Unmarshal(m.Params, &p)
		if p.Type == "error" || p.Type == "assert" {
			var parts []string
			for _, a := range p.Args {
				parts = append(parts, fmt.Sprint(a.Value)+a.Description)
			}
			d.errs = append(d.errs, "console."+p.Type+": "+strings.Join(parts, " "))
		}
	case "Runtime.exceptionThrown":
		d.errs = append(d.errs, "exception: "+string(m.Params))
	case "Log.entryAdded":
		var p struct {
			Entry struct{ Level, Source, Text, URL string } `json:"entry"`
		}
		_ = json.Unmarshal(m.Params, &p)
		if p.Entry.Level == "error" {
			d.errs = append(d.errs, fmt.Sprintf("log %s: %s %s", p.Entry.Source, p.Entry.Text, p.Entry.URL))
		}
	}
}

// call sends a command and returns its result.
func (d *devtools) call(t *testing.T, method string, params any) json.RawMessage {
	t.Helper()
	d.id++
	id := d.id
	req, _ := json.Marshal(map[string]any{"id": id, "method": method, "params": orEmpty(params)})
	if err := d.writeFrame(0x1, req); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		m, err := d.next(deadline)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		if m.ID == id {
			if m.Error != nil {
				t.Fatalf("%s: %s", method, m.Error.Message)
			}
			return m.Result
		}
	}
}

func orEmpty(p any) any {
	if p == nil {
		return map[string]any{}
	}
	return p
}

// open navigates to url, waits for the load event and a short settling
// time, and returns the errors the page caused.
func (d *devtools) open(t *testing.T, u string) []string {
	t.Helper()
	d.errs = nil
	res := d.call(t, "Page.navigate", map[string]any{"url": u})
	var nav struct{ ErrorText string }
	_ = json.Unmarshal(res, &nav)
	if nav.ErrorText != "" {
		t.Fatalf("navigating to %s: %s", u, nav.ErrorText)
	}
	deadline := time.Now().Add(60 * time.Second)
	for loaded := false; !loaded; {
		m, err := d.next(deadline)
		if err != nil {
			t.Fatalf("waiting for %s to load: %v", u, err)
		}
		loaded = m.Method == "Page.loadEventFired"
	}
	settle := time.Now().Add(700 * time.Millisecond)
	for {
		if _, err := d.next(settle); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				break
			}
			t.Fatal(err)
		}
	}
	return append([]string(nil), d.errs...)
}

// eval evaluates a JavaScript expression in the page and decodes its value.
func (d *devtools) eval(t *testing.T, expr string, v any) {
	t.Helper()
	res := d.call(t, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true})
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails json.RawMessage `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatal(err)
	}
	if r.ExceptionDetails != nil {
		t.Fatalf("evaluating %s: %s", expr, r.ExceptionDetails)
	}
	if err := json.Unmarshal(r.Result.Value, v); err != nil {
		t.Fatalf("evaluating %s: %v (%s)", expr, err, r.Result.Value)
	}
}

// screenshot saves the whole page at a window width as a PNG.
func (d *devtools) screenshot(t *testing.T, file string, width int, mobile bool) {
	t.Helper()
	d.call(t, "Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": mobile})
	var lm struct {
		CSSContentSize struct{ Width, Height float64 } `json:"cssContentSize"`
	}
	if err := json.Unmarshal(d.call(t, "Page.getLayoutMetrics", nil), &lm); err != nil {
		t.Fatal(err)
	}
	h := min(lm.CSSContentSize.Height, 16000)
	res := d.call(t, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true,
		"clip": map[string]any{"x": 0, "y": 0, "width": lm.CSSContentSize.Width, "height": h, "scale": 1}})
	d.saveData(t, res, file)
	d.call(t, "Emulation.clearDeviceMetricsOverride", nil)
}

// printPDF prints the page as the browser would on paper.
func (d *devtools) printPDF(t *testing.T, file string) []byte {
	t.Helper()
	res := d.call(t, "Page.printToPDF", map[string]any{"paperWidth": 8.27, "paperHeight": 11.69})
	return d.saveData(t, res, file)
}

func (d *devtools) saveData(t *testing.T, res json.RawMessage, file string) []byte {
	t.Helper()
	var r struct{ Data string }
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatal(err)
	}
	b, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

// The error detection is real: a page with a console error, an uncaught
// exception and a missing image gives three errors.
func TestBrowserReportsPageErrors(t *testing.T) {
	b := startBrowser(t)
	d := b.page(t)
	file := filepath.Join(t.TempDir(), "bad.html")
	page := `<!DOCTYPE html><html><body><img src="missing.png"><script>console.error("boom"); undefinedFunction();</script></body></html>`
	if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	errs := d.open(t, "file://"+file)
	joined := strings.Join(errs, "\n")
	for _, want := range []string{"console.error: boom", "undefinedFunction", "missing.png"} {
		if !strings.Contains(joined, want) {
			t.Errorf("the browser check missed %q; it saw:\n%s", want, joined)
		}
	}
}

// groupAlive tells whether any process of group pgid is still running
// (zombies write no files and may wait for a reaper that is not ours).
func groupAlive(pgid int) bool {
	if syscall.Kill(-pgid, 0) == syscall.ESRCH {
		return false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" && f[0] != "X" && pid > 0 {
			return true
		}
	}
	return false
}
