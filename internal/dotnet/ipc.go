// Package dotnet reads a .NET (Core 3.0 and later) process' garbage
// collector through the runtime's diagnostics port: the Unix socket every
// such process opens in its TMPDIR (dotnet-diagnostic-PID-*-socket), the one
// dotnet-trace and dotnet-counters speak. memdoctor needs no .NET SDK or
// runtime for it.
//
// A session asks the runtime for an EventPipe stream of its GC events
// (provider Microsoft-Windows-DotNETRuntime, keyword GC, informational; at
// verbose, the allocation ticks too), parses the "nettrace" stream it
// sends back and stops the session (StopTracing, on a second connection)
// at the end of its window, on a deadline and when its context is
// cancelled.
//
// Everything the socket sends is the target's and untrusted: the socket
// must belong to the target's user and be served by the target itself
// (the peer's credentials), each answer has a deadline, and the stream is
// bounded in block size, metadata count and total bytes.
package dotnet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
	"unicode/utf16"
)

// The IPC header: a 14-byte magic, the message's total size, its command
// set and command id, and two reserved bytes.
const (
	headerSize = 20
	// Command sets and the commands used here.
	setEventPipe = 0x02
	setProcess   = 0x04
	setServer    = 0xFF

	cmdStopTracing     = 0x01
	cmdCollectTracing  = 0x02
	cmdCollectTracing2 = 0x03

	respOK    = 0x00
	respError = 0xFF

	// formatNetTrace asks for the nettrace stream (0 is the older
	// NetPerf).
	formatNetTrace = 1
)

var magic = [14]byte{'D', 'O', 'T', 'N', 'E', 'T', '_', 'I', 'P', 'C', '_', 'V', '1', 0}

// Provider is one EventPipe provider to enable.
type Provider struct {
	Name     string
	Keywords uint64
	// Level: 4 informational, 5 verbose.
	Level  uint32
	Filter string
}

// The runtime's provider and its GC keyword.
const (
	RuntimeProvider = "Microsoft-Windows-DotNETRuntime"
	KeywordGC       = 0x1
	LevelCritical   = 1
	LevelInfo       = 4
	LevelVerbose    = 5
)

func message(set, cmd byte, payload []byte) ([]byte, error) {
	n := headerSize + len(payload)
	if n > 0xFFFF {
		return nil, fmt.Errorf("diagnostics request of %d bytes: larger than the protocol allows (65535)", n)
	}
	b := make([]byte, 0, n)
	b = append(b, magic[:]...)
	b = binary.LittleEndian.AppendUint16(b, uint16(n))
	b = append(b, set, cmd, 0, 0)
	return append(b, payload...), nil
}

// appendString writes a protocol string: its length in UTF-16 units with
// the terminating NUL, then the units (an empty string is length 0).
func appendString(b []byte, s string) []byte {
	if s == "" {
		return binary.LittleEndian.AppendUint32(b, 0)
	}
	u := utf16.Encode([]rune(s))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(u)+1))
	for _, c := range u {
		b = binary.LittleEndian.AppendUint16(b, c)
	}
	return binary.LittleEndian.AppendUint16(b, 0)
}

// collectTracing is the CollectTracing request: circular buffer size in
// MiB, format, then the providers. v2 is CollectTracing2 (.NET 5+), which
// adds whether to send the rundown (the loaded methods and modules) at the
// end: rundown.
func collectTracing(bufferMB uint32, providers []Provider, v2, rundown bool) ([]byte, error) {
	var p []byte
	p = binary.LittleEndian.AppendUint32(p, bufferMB)
	p = binary.LittleEndian.AppendUint32(p, formatNetTrace)
	cmd := byte(cmdCollectTracing)
	if v2 {
		p = append(p, b2u8(rundown)) // requestRundown
		cmd = cmdCollectTracing2
	}
	p = binary.LittleEndian.AppendUint32(p, uint32(len(providers)))
	for _, pr := range providers {
		p = binary.LittleEndian.AppendUint64(p, pr.Keywords)
		p = binary.LittleEndian.AppendUint32(p, pr.Level)
		p = appendString(p, pr.Name)
		p = appendString(p, pr.Filter)
	}
	return message(setEventPipe, cmd, p)
}

func b2u8(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func stopTracing(session uint64) ([]byte, error) {
	return message(setEventPipe, cmdStopTracing, binary.LittleEndian.AppendUint64(nil, session))
}

// ErrProtocol marks an answer that is not the diagnostics protocol.
var ErrProtocol = errors.New("not a .NET diagnostics answer")

// maxResponse bounds a response's payload: the ones read here are 8 bytes
// (a session id) or 4 (an error code).
const maxResponse = 4096

// readResponse reads one response header and its payload before the
// deadline. An error response becomes an error naming its HRESULT.
func readResponse(c net.Conn, deadline time.Time) ([]byte, error) {
	return readResponseMax(c, deadline, maxResponse)
}

// readResponseMax is readResponse with a payload of at most limit bytes.
func readResponseMax(c net.Conn, deadline time.Time, limit int) ([]byte, error) {
	if err := c.SetReadDeadline(deadline); err != nil {
		return nil, err
	}
	var h [headerSize]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: the socket closed before a whole header", ErrProtocol)
		}
		return nil, err
	}
	if !bytes.Equal(h[:14], magic[:]) {
		return nil, fmt.Errorf("%w: magic %q", ErrProtocol, bytes.TrimRight(h[:14], "\x00"))
	}
	size := int(binary.LittleEndian.Uint16(h[14:]))
	if size < headerSize || size-headerSize > limit {
		return nil, fmt.Errorf("%w: response size %d", ErrProtocol, size)
	}
	payload := make([]byte, size-headerSize)
	if _, err := io.ReadFull(c, payload); err != nil {
		return nil, fmt.Errorf("%w: response payload: %w", ErrProtocol, err)
	}
	if h[16] != setServer {
		return nil, fmt.Errorf("%w: response command set 0x%02x", ErrProtocol, h[16])
	}
	switch h[17] {
	case respOK:
		return payload, nil
	case respError:
		if len(payload) >= 4 {
			hr := binary.LittleEndian.Uint32(payload)
			return nil, &RuntimeError{HResult: hr}
		}
		return nil, &RuntimeError{}
	}
	return nil, fmt.Errorf("%w: response id 0x%02x", ErrProtocol, h[17])
}

// The runtime's refusals (the protocol's error codes).
const (
	hrBadEncoding    = 0x80131384
	hrUnknownCommand = 0x80131385
)

// RuntimeError is the runtime's refusal of a command.
type RuntimeError struct{ HResult uint32 }

func (e *RuntimeError) Error() string {
	switch e.HResult {
	case hrBadEncoding:
		return "the runtime refused a malformed request (HRESULT 0x80131384)"
	case hrUnknownCommand:
		return "the runtime does not know this command (HRESULT 0x80131385): an older runtime"
	}
	return fmt.Sprintf("the runtime refused the command (HRESULT 0x%08x)", e.HResult)
}
