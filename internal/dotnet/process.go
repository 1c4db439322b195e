package dotnet

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
	"unicode/utf16"
)

// The process command set's commands.
const (
	cmdProcessInfo        = 0x00
	cmdProcessEnvironment = 0x02
)

// ProcessInfo is the runtime's answer to ProcessInfo: its pid (in its
// namespace), the runtime instance's cookie (a GUID), its command line,
// operating system and architecture. All of it is the target's word.
type ProcessInfo struct {
	PID                   uint64
	Cookie                string
	CommandLine, OS, Arch string
}

// maxInfoResponse bounds ProcessInfo's answer (a 16-bit size: 65535 at
// most).
const maxInfoResponse = 0xFFFF

// GetProcessInfo asks the runtime for ProcessInfo on a connection of its
// own, within answer.
func GetProcessInfo(ctx context.Context, dial Dialer, answer time.Duration) (*ProcessInfo, error) {
	req, err := message(setProcess, cmdProcessInfo, nil)
	if err != nil {
		return nil, err
	}
	c, err := request(ctx, dial, req, answer, "ProcessInfo")
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close() }()
	payload, err := readResponseMax(c, time.Now().Add(answer), maxInfoResponse)
	if unknownCommand(err) {
		return nil, fmt.Errorf("ProcessInfo: %w (.NET 5 and later answer it)", ErrUnsupported)
	}
	if err != nil {
		return nil, fmt.Errorf("ProcessInfo: %w", err)
	}
	return parseProcessInfo(payload)
}

func parseProcessInfo(b []byte) (*ProcessInfo, error) {
	cur := &cursor{b: b}
	pi := &ProcessInfo{PID: cur.u64("process id")}
	g := cur.take(16, "runtime cookie")
	pi.CommandLine = cur.ipcString("command line")
	pi.OS = cur.ipcString("operating system")
	pi.Arch = cur.ipcString("architecture")
	if cur.err != nil {
		return nil, fmt.Errorf("ProcessInfo: %w", cur.err)
	}
	pi.Cookie = fmt.Sprintf("%08x-%04x-%04x-%x-%x", binary.LittleEndian.Uint32(g), binary.LittleEndian.Uint16(g[4:]),
		binary.LittleEndian.Uint16(g[6:]), g[8:10], g[10:16])
	return pi, nil
}

// ipcString reads a protocol string: its length in UTF-16 units with the
// NUL, then the units (at most 32768).
func (c *cursor) ipcString(what string) string {
	n := c.u32(what)
	if c.err != nil || n == 0 {
		return ""
	}
	if n > 1<<15 {
		c.err = fmt.Errorf("%w: %s of %d characters", ErrFormat, what, n)
		return ""
	}
	raw := c.take(int(n)*2, what)
	if c.err != nil {
		return ""
	}
	u := make([]uint16, 0, n)
	for i := 0; i+1 < len(raw); i += 2 {
		u = append(u, binary.LittleEndian.Uint16(raw[i:]))
	}
	return strings.TrimRight(string(utf16.Decode(u)), "\x00")
}

// ErrUnsupported marks a command the runtime does not know (an older
// runtime).
var ErrUnsupported = errors.New("the runtime does not know this command")

// maxEnvironment bounds the environment the runtime sends.
const maxEnvironment = 1 << 20

// GetEnvironment asks the runtime for its environment (ProcessEnvironment,
// .NET 5 on) and keeps only the variables named; the rest is read and
// dropped unkept. ErrUnsupported: the runtime does not know the command.
func GetEnvironment(ctx context.Context, dial Dialer, answer time.Duration, names []string) (map[string]string, error) {
	req, err := message(setProcess, cmdProcessEnvironment, nil)
	if err != nil {
		return nil, err
	}
	c, err := request(ctx, dial, req, answer, "ProcessEnvironment")
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close() }()
	deadline := time.Now().Add(answer)
	payload, err := readResponseMax(c, deadline, maxResponse)
	if unknownCommand(err) {
		return nil, fmt.Errorf("ProcessEnvironment: %w (.NET 5 and later answer it)", ErrUnsupported)
	}
	if err != nil {
		return nil, fmt.Errorf("ProcessEnvironment: %w", err)
	}
	if len(payload) < 4 {
		return nil, fmt.Errorf("ProcessEnvironment: %w: an answer of %d bytes", ErrProtocol, len(payload))
	}
	n := binary.LittleEndian.Uint32(payload)
	if n > maxEnvironment {
		return nil, fmt.Errorf("ProcessEnvironment: an environment of %d bytes (at most %d)", n, maxEnvironment)
	}
	body := make([]byte, n)
	defer clear(body) // environments hold secrets: nothing but the names asked for is kept
	if _, err := io.ReadFull(c, body); err != nil {
		return nil, fmt.Errorf("ProcessEnvironment: %w: %w", ErrProtocol, err)
	}
	cur := &cursor{b: body}
	count := cur.u32("variable count")
	out := map[string]string{}
	for i := uint32(0); i < count && cur.err == nil; i++ {
		kv := cur.ipcString("variable")
		if k, v, ok := strings.Cut(kv, "="); ok {
			for _, want := range names {
				if k == want {
					if _, seen := out[k]; !seen {
						out[k] = v
					}
				}
			}
		}
	}
	if cur.err != nil {
		return nil, fmt.Errorf("ProcessEnvironment: %w", cur.err)
	}
	return out, nil
}

func unknownCommand(err error) bool {
	var re *RuntimeError
	return errors.As(err, &re) && re.HResult == hrUnknownCommand
}

// request dials and sends one request within answer.
func request(ctx context.Context, dial Dialer, req []byte, answer time.Duration, name string) (net.Conn, error) {
	actx, cancel := context.WithTimeout(ctx, answer)
	c, err := dial(actx)
	cancel()
	if err != nil {
		return nil, err
	}
	if err := c.SetDeadline(time.Now().Add(answer)); err != nil {
		_ = c.Close()
		return nil, err
	}
	if _, err := c.Write(req); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("sending %s: %w", name, err)
	}
	return c, nil
}
