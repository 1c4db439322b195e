// Package lab boots Debian's 6.1 kernel under qemu with a busybox initramfs
// that carries a static memdoctor and static C workloads, runs a scenario
// script inside the guest and reads its results back, so that memdoctor is
// tested on a real kernel with pure cgroup v2, PSI and real reclaim.
//
// The guest (guest/init) mounts proc, sys, devtmpfs and cgroup2 (memory
// controller delegated from the root), loads the virtio and ext4 modules,
// mounts a fresh ext4 disk at /mnt, prints LAB-READY and runs /scenario.sh
// with its output in /mnt/out/scenario.log. The host reads /mnt/out back
// from the disk image with debugfs, without mounting it.
//
// What is built once per test binary (memdoctor, the workloads, the base
// initramfs) lives in a temporary directory; the kernel, fetched by
// fetch-kernel.sh with apt-get download and dpkg -x, lives in the user's
// cache directory (memdoctor-lab/kernel), never in the repository.
package lab

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Lab is a prepared guest: kernel, base initramfs and accelerator.
type Lab struct {
	Kernel  string // vmlinuz
	Release string // the kernel package and release, as fetch-kernel.sh wrote them
	Accel   string // "kvm" or "tcg"
	base    string // the base initramfs (newc cpio)
	dir     string // the temporary directory of this test binary
}

// Run is one boot of the guest.
type Run struct {
	Script  string            // the guest's /scenario.sh (busybox sh); $OUT is the results directory
	Files   map[string][]byte // more files for the initramfs, by path ("etc/x"); mode 0755
	MemMiB  int               // guest memory (default 1024)
	CPUs    int               // vCPUs (default 2)
	DiskMiB int               // data disk size (default 512)
	Cmdline string            // more kernel command-line arguments
	Timeout time.Duration     // for the whole boot (default 3 minutes)
}

// Result is what a boot left behind.
type Result struct {
	Console string        // the serial console
	Out     string        // the guest's /mnt/out, copied to the host
	Log     string        // /mnt/out/scenario.log: what the script printed
	Exit    int           // the script's exit status (-1: not seen)
	Boot    time.Duration // qemu started → LAB-READY seen on the console
	Uptime  float64       // the guest's /proc/uptime at LAB-READY (s)
	Wall    time.Duration // qemu started → qemu exited
}

// File reads one file of the guest's results.
func (r *Result) File(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.Out, name))
	if err != nil {
		t.Fatalf("guest result %s: %v\nscenario log:\n%s", name, err, r.Log)
	}
	return string(b)
}

var (
	once    sync.Once
	shared  *Lab
	skipMsg string
	errMsg  string
	tmpRoot string
)

// Main runs the tests and removes what Open built.
func Main(m *testing.M) {
	code := m.Run()
	if tmpRoot != "" && os.Getenv("MEMDOCTOR_LAB_KEEP") == "" {
		_ = os.RemoveAll(tmpRoot)
	}
	os.Exit(code)
}

// Open prepares the lab once per test binary. It skips (with the reason)
// only where qemu cannot run this guest at all: not linux/amd64, no
// qemu-system-x86_64, or Debian's kernel cannot be had; any other missing
// piece fails the test.
func Open(t testing.TB) *Lab {
	t.Helper()
	once.Do(func() {
		var err error
		shared, skipMsg, err = prepare()
		if err != nil {
			errMsg = err.Error()
		}
	})
	if skipMsg != "" {
		t.Skip("lab: " + skipMsg)
	}
	if errMsg != "" {
		t.Fatal("lab: " + errMsg)
	}
	return shared
}

func moduleRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		p := filepath.Dir(d)
		if p == d {
			return "", errors.New("go.mod not found above the working directory")
		}
		d = p
	}
}

func run(dir string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, b.String())
	}
	return nil
}

func prepare() (*Lab, string, error) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return nil, "the lab guest is x86_64 Linux; this host is " + runtime.GOOS + "/" + runtime.GOARCH, nil
	}
	qemu, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		return nil, "qemu-system-x86_64 is not installed (scripts/install-test-deps.sh installs qemu-system-x86)", nil
	}
	_ = qemu
	root, err := moduleRoot()
	if err != nil {
		return nil, "", err
	}
	labDir := filepath.Join(root, "lab")
	out, err := exec.Command(filepath.Join(labDir, "fetch-kernel.sh")).Output()
	if err != nil {
		var ee *exec.ExitError
		msg := err.Error()
		if errors.As(err, &ee) {
			msg = strings.TrimSpace(string(ee.Stderr))
		}
		return nil, "Debian's 6.1 kernel cannot be had here (" + msg + ")", nil
	}
	kdir := strings.TrimSpace(string(out))
	for _, tool := range []string{"busybox", "cpio", "mkfs.ext4", "debugfs", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, "", fmt.Errorf("%s is not installed (scripts/install-test-deps.sh installs it)", tool)
		}
	}
	tmpRoot, err = os.MkdirTemp("", "memdoctor-lab-")
	if err != nil {
		return nil, "", err
	}
	l := &Lab{Kernel: filepath.Join(kdir, "vmlinuz"), dir: tmpRoot}
	if v, err := os.ReadFile(filepath.Join(kdir, "version")); err == nil {
		l.Release = strings.TrimSpace(string(v))
	}
	ir := filepath.Join(tmpRoot, "initramfs")
	for _, d := range []string{"bin", "lib/modules", "proc", "sys", "dev", "mnt", "tmp", "etc"} {
		if err := os.MkdirAll(filepath.Join(ir, d), 0o755); err != nil {
			return nil, "", err
		}
	}
	bb, _ := exec.LookPath("busybox")
	if err := copyFile(bb, filepath.Join(ir, "bin/busybox"), 0o755); err != nil {
		return nil, "", err
	}
	if err := staticCheck(filepath.Join(ir, "bin/busybox")); err != nil {
		return nil, "", fmt.Errorf("%w (install busybox-static)", err)
	}
	if err := copyFile(filepath.Join(labDir, "guest/init"), filepath.Join(ir, "init"), 0o755); err != nil {
		return nil, "", err
	}
	mods, err := os.ReadDir(filepath.Join(kdir, "modules"))
	if err != nil {
		return nil, "", err
	}
	for _, m := range mods {
		if err := copyFile(filepath.Join(kdir, "modules", m.Name()), filepath.Join(ir, "lib/modules", m.Name()), 0o644); err != nil {
			return nil, "", err
		}
	}
	// memdoctor, static (no cgo), as the guest has no libc.
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", filepath.Join(ir, "bin/memdoctor"), "./cmd/memdoctor")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		return nil, "", fmt.Errorf("building memdoctor: %w\n%s", err, b)
	}
	// The workloads, static C.
	srcs, _ := filepath.Glob(filepath.Join(labDir, "workloads", "*.c"))
	for _, src := range srcs {
		name := strings.TrimSuffix(filepath.Base(src), ".c")
		if err := run(root, "gcc", "-static", "-O2", "-Wall", "-o", filepath.Join(ir, "bin", name), src); err != nil {
			return nil, "", err
		}
	}
	l.base = filepath.Join(tmpRoot, "base.cpio")
	if err := mkCpio(ir, l.base); err != nil {
		return nil, "", err
	}
	l.Accel = probeAccel(l)
	return l, "", nil
}

// staticCheck fails for a dynamically linked executable (one that names an
// interpreter): the guest has no libc.
func staticCheck(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked", path)
		}
	}
	return nil
}

func copyFile(src, dst string, mode os.FileMode) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, mode)
}

func mkCpio(dir, dst string) error {
	cmd := exec.Command("sh", "-c", "find . | LC_ALL=C sort | cpio -o -H newc --quiet > "+shellQuote(dst))
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("cpio: %w\n%s", err, b)
	}
	return nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// probeAccel tries KVM once with a short limit (it aborts or hangs on some
// hosts) and falls back to TCG. MEMDOCTOR_LAB_ACCEL=tcg|kvm decides instead.
func probeAccel(l *Lab) string {
	if a := os.Getenv("MEMDOCTOR_LAB_ACCEL"); a == "tcg" || a == "kvm" {
		return a
	}
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return "tcg"
	}
	_ = f.Close()
	l.Accel = "kvm"
	res, err := l.boot(Run{Script: "echo probe", Timeout: 20 * time.Second, MemMiB: 256, DiskMiB: 16})
	if err != nil || res.Exit != 0 {
		return "tcg"
	}
	return "kvm"
}

// Boot runs one scenario and returns what it left. A boot that does not
// reach LAB-DONE fails the test, with the console.
func (l *Lab) Boot(t testing.TB, r Run) *Result {
	t.Helper()
	res, err := l.boot(r)
	if err != nil {
		t.Fatalf("lab boot (%s): %v", l.Accel, err)
	}
	t.Logf("lab: %s, accel %s, boot to first command %.2fs (guest uptime %.2fs), wall %.1fs, exit %d",
		l.Release, l.Accel, res.Boot.Seconds(), res.Uptime, res.Wall.Seconds(), res.Exit)
	return res
}

var readyRE = regexp.MustCompile(`LAB-READY uptime=([0-9.]+)`)
var exitRE = regexp.MustCompile(`LAB-EXIT (\d+)`)

func (l *Lab) boot(r Run) (*Result, error) {
	if r.MemMiB == 0 {
		r.MemMiB = 1024
	}
	if r.CPUs == 0 {
		r.CPUs = 2
	}
	if r.DiskMiB == 0 {
		r.DiskMiB = 512
	}
	if r.Timeout == 0 {
		r.Timeout = 3 * time.Minute
	}
	dir, err := os.MkdirTemp(l.dir, "run-")
	if err != nil {
		return nil, err
	}
	// The run's own files go in a second cpio archive after the base one:
	// the kernel unpacks concatenated archives in order.
	ov := filepath.Join(dir, "overlay")
	files := map[string][]byte{"scenario.sh": []byte(r.Script)}
	for k, v := range r.Files {
		files[k] = v
	}
	names := make([]string, 0, len(files))
	for k := range files {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		p := filepath.Join(ov, filepath.Clean("/"+k))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, files[k], 0o755); err != nil {
			return nil, err
		}
	}
	runCpio := filepath.Join(dir, "run.cpio")
	if err := mkCpio(ov, runCpio); err != nil {
		return nil, err
	}
	initrd := filepath.Join(dir, "initrd")
	if err := concat(initrd, l.base, runCpio); err != nil {
		return nil, err
	}
	disk := filepath.Join(dir, "disk.img")
	if err := run(dir, "mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=1,lazy_journal_init=1", disk, strconv.Itoa(r.DiskMiB)+"M"); err != nil {
		return nil, err
	}
	machine := "accel=" + l.Accel
	cpu := "max"
	if l.Accel == "kvm" {
		cpu = "host"
	}
	args := []string{"-machine", machine, "-cpu", cpu, "-smp", strconv.Itoa(r.CPUs), "-m", strconv.Itoa(r.MemMiB),
		"-nographic", "-no-reboot", "-kernel", l.Kernel, "-initrd", initrd,
		"-append", strings.TrimSpace("console=ttyS0 quiet panic=-1 " + r.Cmdline),
		"-drive", "file=" + disk + ",format=raw,if=virtio"}
	ctx, cancel := context.WithTimeout(context.Background(), r.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "qemu-system-x86_64", args...)
	cmd.Stdin = nil
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	res := &Result{Exit: -1}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var console strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			console.WriteString(line)
			console.WriteByte('\n')
			if m := readyRE.FindStringSubmatch(line); m != nil && res.Boot == 0 {
				res.Boot = time.Since(start)
				res.Uptime, _ = strconv.ParseFloat(m[1], 64)
			}
			if m := exitRE.FindStringSubmatch(line); m != nil {
				res.Exit, _ = strconv.Atoi(m[1])
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	werr := cmd.Wait()
	_ = pw.Close()
	<-done
	res.Wall = time.Since(start)
	res.Console = console.String()
	if ctx.Err() != nil {
		return res, fmt.Errorf("no LAB-DONE within %v\n%s", r.Timeout, tail(res.Console, 4000))
	}
	if werr != nil {
		return res, fmt.Errorf("qemu: %w\n%s", werr, tail(res.Console, 4000))
	}
	if !strings.Contains(res.Console, "LAB-DONE") {
		return res, fmt.Errorf("no LAB-DONE\n%s", tail(res.Console, 4000))
	}
	if i := strings.Index(res.Console, "LAB-ERROR"); i >= 0 {
		return res, fmt.Errorf("the guest could not set up: %s", firstLine(res.Console[i:]))
	}
	res.Out = filepath.Join(dir, "out")
	if err := run(dir, "debugfs", "-R", "rdump /out "+dir, disk); err != nil {
		return res, err
	}
	if b, err := os.ReadFile(filepath.Join(res.Out, "scenario.log")); err == nil {
		res.Log = string(b)
	}
	if os.Getenv("MEMDOCTOR_LAB_KEEP") == "" {
		_ = os.Remove(disk)
	}
	return res, nil
}

func concat(dst string, srcs ...string) error {
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	for _, s := range srcs {
		in, err := os.Open(s)
		if err != nil {
			_ = f.Close()
			return err
		}
		_, err = io.Copy(f, in)
		_ = in.Close()
		if err != nil {
			_ = f.Close()
			return err
		}
	}
	return f.Close()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
