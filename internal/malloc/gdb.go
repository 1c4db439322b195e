package malloc

// Calling functions inside a running process with gdb, safely.
//
// memdoctor drives gdb through its machine interface (gdb --interpreter=mi2)
// one command at a time, so it knows at every moment whether a function
// call is running inside the process, and it chooses the thread that makes
// the calls after seeing where every thread is stopped. gdb needs no debug
// symbols: malloc_info, malloc_trim, mallinfo2, mmap, fmemopen, ftell and
// fclose are in libc.so.6's dynamic symbol table, and every call is cast to
// its declared type ("(int) malloc_trim((unsigned long) 0)"), which gdb
// accepts for functions without debug information. Separate debug files
// (libc6-dbg) are deliberately not loaded: they only make attaching slower.
//
// What can go wrong, and what this file does about it:
//
//   - Killing gdb while a function call runs in the process leaves the
//     process returning into gdb's dummy frame breakpoint, with no debugger
//     to catch it: it dies of SIGTRAP or SIGSEGV (seen on this machine). So
//     gdb is killed on timeout only between calls; gdb's output goes to a
//     file and it runs in its own process group, so neither a closed pipe
//     nor a Ctrl-C meant for memdoctor reaches it in the middle of a call;
//     if memdoctor dies, gdb reads EOF after the call and detaches.
//   - A call made on a thread that was stopped inside malloc, holding an
//     arena lock, waits for that lock forever. The calling thread is chosen
//     blocked in a system call malloc never makes (chooseThread). If a call
//     still outlives the timeout while its thread waits on a futex, it holds
//     no lock (malloc_info, malloc_trim and mallinfo2 take one arena lock at
//     a time and wait only to take the next), so memdoctor interrupts it
//     with SIGINT to that thread and gdb, with unwindonsignal on, restores
//     the thread to where it was. A call busy in madvise (a big trim) is
//     left to finish: interrupting it would leave a lock held.
//   - Signals that arrive during a call would make gdb abandon it (and a
//     later detach then crashes the process): every signal except SIGINT
//     is passed to the program without stopping ("handle all nostop").
//   - All threads run during a call (scheduler-locking off), so a lock
//     held by another thread is released; between calls they are stopped.
//   - Attaching to a process that is already stopped delivers its SIGSTOP
//     during the first call, which gdb then abandons: stopped processes are
//     refused (checkAttach).
//   - gdb killed while attaching can leave the process stopped by the
//     SIGSTOP of PTRACE_ATTACH: afterwards every thread's state is checked
//     and SIGCONT is sent when needed.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Call is one function call made inside the process.
type Call struct {
	// Function is the function called.
	Function string `json:"function"`
	// Ms is the wall time of the call as memdoctor saw it, including gdb
	// resuming and stopping the threads around it.
	Ms float64 `json:"ms"`
}

// Pause says how long gdb held the process.
type Pause struct {
	// StoppedMs is how long the threads were held stopped: attaching,
	// between calls, detaching. It includes gdb's work and memdoctor's
	// round trips, so it is an upper bound.
	StoppedMs float64 `json:"stopped_ms"`
	// AttachedMs is the wall time from attach to detach.
	AttachedMs float64 `json:"attached_ms"`
	// CallsMs is the time spent in calls, during which every thread ran.
	CallsMs float64 `json:"calls_ms"`
	// Calls lists every call.
	Calls []Call `json:"calls"`
	// Threads is the number of threads gdb stopped.
	Threads int `json:"threads"`
	// Thread is the thread (TID) the calls ran on, and Why says why it
	// was chosen.
	Thread int    `json:"thread"`
	Why    string `json:"thread_choice"`
	// Resumed is true when memdoctor found the process stopped after gdb
	// and sent it SIGCONT.
	Resumed bool `json:"resumed,omitempty"`
}

// session is one gdb process attached to one target.
type session struct {
	t   *target
	opt Options
	dir string

	cmd      *exec.Cmd
	stdin    io.WriteCloser
	out      *os.File
	notify   *os.File // inotify on gdb's output, or nil
	pending  []byte
	token    int
	waitDone chan struct{}
	lines    []string        // the last lines of output, for errors
	console  strings.Builder // console output of the current command

	deadline time.Time // Timeout: gdb may be killed between calls after it
	hard     time.Time // Timeout + CallGrace: a call may run until then

	targetExited bool
	detaching    bool
	inCall       string // function being called, "" between calls
	callTID      int
	interrupted  bool // a call was interrupted (SIGINT) after the timeout
	cleanup      bool // undoing the session's work: see cleanupGrace
	left         bool // gdb was left running to finish a call and detach
	killed       bool

	attachStart time.Time
	attached    bool
	pause       Pause
	errnoAddr   uint64
	errnoVal    int64
	errnoSaved  bool
}

// gdbSettings are set before anything is loaded (-iex). A setting an older
// gdb does not know fails alone without stopping the others.
func gdbSettings(dir string) []string {
	nodebug := filepath.Join(dir, "nodebug")
	return []string{
		"set debuginfod enabled off",
		"set debug-file-directory " + nodebug,
		"set auto-load off",
		"set libthread-db-search-path " + nodebug,
		"set pagination off",
		"set confirm off",
		"set width 0",
		"set unwindonsignal on",
		"set scheduler-locking off",
		"handle all nostop noprint pass",
	}
}

// gdbArgv is the command line gdb is started with.
func gdbArgv(gdb, dir string) []string {
	argv := []string{gdb, "--interpreter=mi2", "-nx", "-q"}
	for _, s := range gdbSettings(dir) {
		argv = append(argv, "-iex", s)
	}
	return argv
}

// gdbPath finds gdb.
func gdbPath(opt Options) (string, error) {
	name := opt.GDB
	if name == "" {
		name = "gdb"
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: %s is not installed or not in PATH (apt-get install gdb; dnf install gdb)", ErrNoGDB, name)
	}
	return p, nil
}

// startSession starts gdb (not yet attached).
func startSession(ctx context.Context, t *target, opt Options) (*session, error) {
	gdb, err := gdbPath(opt)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "memdoctor-gdb-")
	if err != nil {
		return nil, err
	}
	if err := os.Mkdir(filepath.Join(dir, "nodebug"), 0o700); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	outPath := filepath.Join(dir, "gdb.out")
	w, err := os.OpenFile(outPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	defer func() { _ = w.Close() }() // gdb has its own descriptor
	r, err := os.Open(outPath)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	argv := gdbArgv(gdb, dir)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = gdbEnv()
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		_ = r.Close() // read-only
		_ = os.RemoveAll(dir)
		return nil, err
	}
	start := time.Now()
	s := &session{t: t, opt: opt, dir: dir, cmd: cmd, stdin: stdin, out: r, notify: watch(outPath), waitDone: make(chan struct{}),
		deadline: start.Add(opt.Timeout), hard: start.Add(opt.Timeout + opt.CallGrace)}
	if dl, ok := ctx.Deadline(); ok && dl.Before(s.deadline) {
		s.deadline = dl
	}
	if err := cmd.Start(); err != nil {
		_ = r.Close() // read-only
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("%w: starting %s: %w", ErrGDB, gdb, err)
	}
	go func() {
		_ = cmd.Wait() // the exit status says nothing the output does not
		close(s.waitDone)
	}()
	// The first prompt: gdb has read its settings.
	if _, err := s.await(ctx, -1); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// gdbEnv is gdb's environment: no debuginfod, messages in English.
func gdbEnv() []string {
	env := []string{"LC_ALL=C", "TERM=dumb"}
	for _, k := range []string{"PATH", "HOME", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// send writes one command and returns its token.
func (s *session) send(command string) (int, error) {
	s.token++
	s.console.Reset()
	if _, err := fmt.Fprintf(s.stdin, "%d%s\n", s.token, command); err != nil {
		return 0, fmt.Errorf("%w: writing to gdb: %w (%s)", ErrGDB, err, s.tail())
	}
	return s.token, nil
}

// do runs one command and returns its result record; ^error is an error.
func (s *session) do(ctx context.Context, command string) (miRecord, error) {
	tok, err := s.send(command)
	if err != nil {
		return miRecord{}, err
	}
	rec, err := s.await(ctx, tok)
	if err != nil {
		return rec, err
	}
	if rec.class == "error" {
		return rec, fmt.Errorf("%w: %s: %s", ErrGDB, command, rec.str("msg"))
	}
	return rec, nil
}

// eval evaluates an expression that makes no call.
func (s *session) eval(ctx context.Context, expr string) (uint64, error) {
	rec, err := s.do(ctx, "-data-evaluate-expression "+miQuote(expr))
	if err != nil {
		return 0, err
	}
	v, ok := miNumber(rec.str("value"))
	if !ok {
		return 0, fmt.Errorf("%w: %s = %q: not a number", ErrGDB, expr, rec.str("value"))
	}
	return v, nil
}

// call calls a function in the process and returns the value, timed.
func (s *session) call(ctx context.Context, function, expr string) (uint64, error) {
	if !s.cleanup && (time.Now().After(s.deadline) || ctx.Err() != nil) {
		return 0, fmt.Errorf("%w: %s not called: the %s timeout expired", ErrTimeout, function, s.opt.Timeout)
	}
	tok, err := s.send("-data-evaluate-expression " + miQuote(expr))
	if err != nil {
		return 0, err
	}
	s.inCall = function
	start := time.Now()
	rec, err := s.await(ctx, tok)
	if err != nil {
		return 0, err
	}
	// The call returned, or was unwound: the thread is back where it was.
	s.inCall = ""
	s.pause.Calls = append(s.pause.Calls, Call{Function: function, Ms: ms(time.Since(start))})
	if rec.class == "error" {
		msg := rec.str("msg")
		if s.interrupted {
			return 0, fmt.Errorf("%w: %s did not return within %s; its thread was waiting on a lock, so memdoctor interrupted it and gdb restored the thread to where it was (nothing changed)", ErrTimeout, function, s.opt.Timeout)
		}
		return 0, fmt.Errorf("%w: calling %s: %s", ErrGDB, function, msg)
	}
	v, ok := miNumber(rec.str("value"))
	if !ok {
		return 0, fmt.Errorf("%w: %s returned %q", ErrGDB, function, rec.str("value"))
	}
	return v, nil
}

// await reads output until the result record of token (-1: the first
// prompt), handling the deadlines.
func (s *session) await(ctx context.Context, token int) (miRecord, error) {
	buf := make([]byte, 64<<10)
	for {
		for {
			i := bytes.IndexByte(s.pending, '\n')
			if i < 0 {
				break
			}
			line := string(s.pending[:i])
			s.pending = s.pending[i+1:]
			s.remember(line)
			rec, ok := parseMI(line)
			if !ok {
				continue
			}
			switch {
			case rec.kind == '~':
				s.console.WriteString(rec.text)
			case rec.kind == '(' && token < 0:
				return rec, nil
			case rec.kind == '=' && rec.class == "thread-group-exited" && !s.detaching:
				s.targetExited = true // gdb reports it for a detach too
			case rec.kind == '^' && rec.token == token && token >= 0:
				return rec, nil
			}
		}
		n, _ := s.out.Read(buf)
		if n > 0 {
			s.pending = append(s.pending, buf[:n]...)
			continue
		}
		select {
		case <-s.waitDone:
			// Read what gdb wrote last.
			if n, _ := s.out.Read(buf); n > 0 {
				s.pending = append(s.pending, buf[:n]...)
				continue
			}
			s.inCall = ""
			return miRecord{}, fmt.Errorf("%w: gdb exited: %s", ErrGDB, s.tail())
		default:
		}
		now := time.Now()
		if now.After(s.deadline) || ctx.Err() != nil {
			if err := s.overdue(ctx, now); err != nil {
				return miRecord{}, err
			}
		}
		s.wait()
	}
}

// wait blocks until gdb writes more output, or for a few milliseconds.
// inotify wakes it at once; Go's timers alone would add ~1 ms to every
// command, while the process is stopped.
func (s *session) wait() {
	if s.notify == nil {
		time.Sleep(time.Millisecond)
		return
	}
	var ev [4096]byte
	_ = s.notify.SetReadDeadline(time.Now().Add(5 * time.Millisecond))
	if _, err := s.notify.Read(ev[:]); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		_ = s.notify.Close() // read-only
		s.notify = nil
	}
}

// watch opens an inotify watch on gdb's output file (nil if unavailable).
func watch(name string) *os.File {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return nil
	}
	if _, err := syscall.InotifyAddWatch(fd, name, syscall.IN_MODIFY); err != nil {
		_ = syscall.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), "inotify") // non-blocking: read through the poller
}

// overdue decides what to do after the deadline: nil means keep waiting.
func (s *session) overdue(ctx context.Context, now time.Time) error {
	if s.inCall == "" {
		if s.cleanup && now.Before(s.deadline.Add(cleanupGrace)) && ctx.Err() == nil {
			return nil
		}
		s.kill()
		if ctx.Err() != nil && now.Before(s.deadline) {
			return fmt.Errorf("interrupted (%s): memdoctor killed gdb, which detaches it from the process: %w", s.phase(), ctx.Err())
		}
		return fmt.Errorf("%w: gdb did not finish within %s (%s); memdoctor killed gdb, which detaches it from the process", ErrTimeout, s.opt.Timeout, s.phase())
	}
	if !s.interrupted && s.callBlockedOnLock() {
		if tracerOf(s.t.pid, s.callTID) == s.cmd.Process.Pid {
			// The SIGINT stops the thread in gdb (nopass): it never
			// reaches the program while gdb traces it.
			if err := syscall.Tgkill(s.t.pid, s.callTID, syscall.SIGINT); err == nil {
				s.interrupted = true
				return nil
			}
		}
	}
	if now.After(s.hard) {
		s.abandon()
		return fmt.Errorf("%w: %s has run for more than %s in thread %d of pid %d and is busy (not waiting on a lock): stopping it now could leave an allocator lock held or crash the process. gdb (pid %d) is left to finish it and detach on its own; check with `grep TracerPid /proc/%d/status`",
			ErrCallStuck, s.inCall, s.opt.Timeout+s.opt.CallGrace, s.callTID, s.t.pid, s.cmd.Process.Pid, s.t.pid)
	}
	return nil
}

func (s *session) phase() string {
	switch {
	case s.attachStart.IsZero():
		return "before attaching: gdb was starting"
	case !s.attached:
		return "while attaching"
	}
	return "between calls"
}

// cleanupGrace is how long past the timeout the commands that undo the
// session's work (fclose, munmap, errno, detach) may still take: they are
// quick, and a clean detach beats a kill.
const cleanupGrace = 2 * time.Second

// windDown marks the start of those commands.
func (s *session) windDown() { s.cleanup = true }

// callBlockedOnLock reports whether the calling thread waits on a futex.
func (s *session) callBlockedOnLock() bool {
	sc, ok := s.t.syscalls()
	if !ok {
		return false
	}
	ths, err := readThreads(s.t.pid)
	if err != nil {
		return false
	}
	for _, th := range ths {
		if th.tid == s.callTID {
			return !th.running && th.syscall == sc.futex
		}
	}
	return false
}

func (s *session) remember(line string) {
	if len(line) > 300 {
		line = line[:300] + "…"
	}
	s.lines = append(s.lines, line)
	if len(s.lines) > 40 {
		s.lines = s.lines[len(s.lines)-40:]
	}
}

// tail summarises gdb's last output for an error message.
func (s *session) tail() string {
	var msgs []string
	for _, l := range s.lines {
		rec, ok := parseMI(l)
		switch {
		case !ok && strings.TrimSpace(l) != "":
			msgs = append(msgs, strings.TrimSpace(l))
		case ok && (rec.kind == '~' || rec.kind == '&') && strings.TrimSpace(rec.text) != "":
			msgs = append(msgs, strings.TrimSpace(rec.text))
		case ok && rec.kind == '^' && rec.class == "error":
			msgs = append(msgs, rec.str("msg"))
		}
	}
	if len(msgs) > 6 {
		msgs = msgs[len(msgs)-6:]
	}
	if len(msgs) == 0 {
		return "no output"
	}
	return strings.Join(msgs, " | ")
}

// kill kills gdb and everything it started; only ever between calls.
func (s *session) kill() {
	if s.killed {
		return
	}
	s.killed = true
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-s.waitDone:
	case <-time.After(5 * time.Second):
	}
}

// abandon leaves gdb to finish the running call; at EOF on its input it
// quits, which detaches it from the process.
func (s *session) abandon() {
	s.left = true
	_ = s.stdin.Close()
}

// close ends the session: gdb quits (detaching if still attached), then
// the process is checked and resumed if it was left stopped.
func (s *session) close() {
	if !s.left {
		select {
		case <-s.waitDone:
		default:
			_, _ = s.send("-gdb-exit")
			_ = s.stdin.Close()
			select {
			case <-s.waitDone:
			case <-time.After(3 * time.Second):
				if s.inCall == "" {
					s.kill()
				}
			}
		}
	}
	_ = s.out.Close() // read-only
	if s.notify != nil {
		_ = s.notify.Close()
	}
	if !s.left {
		_ = os.RemoveAll(s.dir)
		s.pause.Resumed = resumeIfStopped(s.t.pid)
	}
}

// resumeIfStopped sends SIGCONT when the process is stopped or has a
// SIGSTOP pending (the one PTRACE_ATTACH sends, when gdb died before
// taking it). It watches a little while: a pending stop lands late.
func resumeIfStopped(pid int) bool {
	resumed := false
	for i := 0; i < 8; i++ {
		states, err := taskStates(pid)
		if err != nil || len(states) == 0 {
			return resumed // gone
		}
		stopped := false
		for _, st := range states {
			if st == 'T' || st == 't' {
				stopped = true
			}
		}
		if (stopped && tracerOf(pid, pid) == 0) || stopPending(pid) {
			if syscall.Kill(pid, syscall.SIGCONT) == nil {
				resumed = true
			}
		} else if i >= 2 {
			return resumed
		}
		time.Sleep(10 * time.Millisecond)
	}
	return resumed
}

// attach attaches gdb, chooses the calling thread and saves its errno.
func (s *session) attach(ctx context.Context) error {
	s.attachStart = time.Now()
	if _, err := s.do(ctx, "-target-attach "+strconv.Itoa(s.t.pid)); err != nil {
		return s.attachError(err)
	}
	s.attached = true
	sc, known := s.t.syscalls()
	ths, err := readThreads(s.t.pid)
	if err != nil {
		known = false
	}
	s.pause.Threads = len(ths)
	s.callTID, s.pause.Why = chooseThread(s.t.pid, ths, sc, known)
	id, err := s.gdbThread(ctx, s.callTID)
	if err != nil && s.callTID != s.t.pid {
		s.callTID, s.pause.Why = s.t.pid, "main thread (gdb did not list the chosen one)"
		id, err = s.gdbThread(ctx, s.callTID)
	}
	if err != nil {
		return err
	}
	s.pause.Thread = s.callTID
	if _, err := s.do(ctx, "-thread-select "+id); err != nil {
		return err
	}
	// errno is per thread, and any of the calls may change it.
	addr, err := s.call(ctx, "__errno_location", "(int *) __errno_location()")
	if err != nil {
		return err
	}
	v, err := s.eval(ctx, fmt.Sprintf("*(int *) %#x", addr))
	if err != nil {
		return err
	}
	s.errnoAddr, s.errnoVal, s.errnoSaved = addr, int64(int32(uint32(v))), true
	return nil
}

// gdbThread returns gdb's number for thread tid. "thread find" searches
// the target ids without unwinding every thread's stack, as -thread-info
// does (5 ms for 9 threads, while the process is stopped).
func (s *session) gdbThread(ctx context.Context, tid int) (string, error) {
	if _, err := s.do(ctx, "-interpreter-exec console "+miQuote(fmt.Sprintf("thread find LWP %d", tid))); err != nil {
		return "", err
	}
	// Thread 3 has target id 'Thread 0x7f8c12c4d6c0 (LWP 24230)'
	for _, l := range strings.Split(s.console.String(), "\n") {
		n, rest, ok := strings.Cut(strings.TrimPrefix(l, "Thread "), " has target id ")
		if ok && lwpOf(rest) == tid {
			return n, nil
		}
	}
	return "", fmt.Errorf("%w: gdb lists no thread with LWP %d: %s", ErrGDB, tid, strings.TrimSpace(s.console.String()))
}

func lwpOf(targetID string) int {
	_, after, ok := strings.Cut(targetID, "LWP ")
	if !ok {
		return 0
	}
	n := 0
	for _, c := range after {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// attachError classifies a failed attach.
func (s *session) attachError(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "Operation not permitted"):
		return fmt.Errorf("%w: gdb could not attach to pid %d: %s", ErrPtraceDenied, s.t.pid, ptraceHint())
	case strings.Contains(msg, "No such process"):
		return fmt.Errorf("%w: pid %d exited", ErrProcessGone, s.t.pid)
	}
	return err
}

// ptraceHint says why ptrace may be refused on this host.
func ptraceHint() string {
	hints := []string{}
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil {
		switch v := strings.TrimSpace(string(b)); v {
		case "1":
			hints = append(hints, "kernel.yama.ptrace_scope=1 lets a process trace only its descendants: run memdoctor as root (CAP_SYS_PTRACE)")
		case "2":
			hints = append(hints, "kernel.yama.ptrace_scope=2: only root (CAP_SYS_PTRACE) may attach")
		case "3":
			hints = append(hints, "kernel.yama.ptrace_scope=3: attaching is disabled until reboot")
		}
	}
	hints = append(hints, "in a container memdoctor needs CAP_SYS_PTRACE (docker run --cap-add SYS_PTRACE) and a seccomp profile that allows ptrace",
		"a process that made itself undumpable (prctl PR_SET_DUMPABLE 0) can only be traced by root")
	return strings.Join(hints, "; ")
}

// detach restores errno and detaches.
func (s *session) detach(ctx context.Context) error {
	var first error
	s.windDown()
	if s.errnoSaved {
		if _, err := s.eval(ctx, fmt.Sprintf("*(int *) %#x = %d", s.errnoAddr, s.errnoVal)); err != nil {
			first = err
		}
	}
	s.detaching = true
	if _, err := s.do(ctx, "-target-detach"); err != nil {
		if first == nil {
			first = err
		}
	} else {
		s.attached = false
	}
	s.finishPause()
	return first
}

// finishPause computes the pause figures once gdb let go of the process.
func (s *session) finishPause() {
	if s.attachStart.IsZero() || s.pause.AttachedMs != 0 {
		return
	}
	s.pause.AttachedMs = ms(time.Since(s.attachStart))
	for _, c := range s.pause.Calls {
		s.pause.CallsMs += c.Ms
	}
	s.pause.StoppedMs = max(0, s.pause.AttachedMs-s.pause.CallsMs)
}

// withSession attaches gdb to the target, runs fn, and always detaches;
// it returns the pause (nil when gdb never attached).
func withSession(ctx context.Context, t *target, opt Options, fn func(*session) error) (*Pause, error) {
	s, err := startSession(ctx, t, opt)
	if err != nil {
		return nil, err
	}
	err = s.attach(ctx)
	if err == nil {
		err = fn(s)
	}
	if s.attached && !s.killed && !s.left {
		if derr := s.detach(ctx); err == nil {
			err = derr
		}
	}
	s.finishPause()
	s.close()
	if s.targetExited && (err == nil || errors.Is(err, ErrGDB)) {
		err = fmt.Errorf("%w: pid %d exited while gdb was attached", ErrProcessGone, t.pid)
	}
	p := s.pause
	if s.attachStart.IsZero() {
		return nil, err
	}
	return &p, err
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
