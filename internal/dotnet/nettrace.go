package dotnet

// The nettrace stream (EventPipe format V4 and V5, .NET Core 3.0 on): the
// magic "Nettrace", the FastSerialization header, then objects, each a
// type (its name and version) and a body: the Trace object (clock and
// process), then blocks (MetadataBlock, StackBlock, EventBlock, SPBlock),
// each a size, padding to 4 bytes and the block; a NullReference tag ends
// the stream. Events in metadata and event blocks have headers compressed
// against the previous header of the block (flags byte, then only the
// fields that changed), or uncompressed fixed headers.
//
// Nothing in the stream is trusted: each length is checked against what
// is left of its block and against the caps in Limits, and a stream that
// breaks them ends the parse with an error.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"unicode/utf16"
)

// Limits bound a parse.
type Limits struct {
	// MaxBlock is the largest block accepted (the runtime writes blocks
	// of at most 100 KB).
	MaxBlock int
	// MaxMetadata is how many event kinds (metadata records) are kept.
	MaxMetadata int
	// MaxBytes is the whole stream's size at most.
	MaxBytes int64
}

// DefaultLimits fit any GC session of minutes.
var DefaultLimits = Limits{MaxBlock: 1 << 20, MaxMetadata: 4096, MaxBytes: 256 << 20}

// ErrFormat marks a stream that is not well-formed nettrace.
var ErrFormat = errors.New("malformed nettrace")

// ErrLimit marks a stream past one of the Limits.
var ErrLimit = errors.New("nettrace past its limit")

// Meta describes one kind of event.
type Meta struct {
	Provider string
	EventID  uint32
	Version  uint32
	Name     string
	// Fields describe the payload of a self-describing event (an
	// EventSource's, such as the counters); nil when the metadata gives
	// none or they could not be read.
	Fields []Field
}

// Field is one field of a payload: its name, its type (TypeCode) and,
// for an object, its own fields.
type Field struct {
	Name   string
	Type   uint32
	Fields []Field
}

// TypeCodes of the fields (System.TypeCode).
const (
	TypeObject  = 1
	TypeBoolean = 3
	TypeChar    = 4
	TypeSByte   = 5
	TypeByte    = 6
	TypeInt16   = 7
	TypeUInt16  = 8
	TypeInt32   = 9
	TypeUInt32  = 10
	TypeInt64   = 11
	TypeUInt64  = 12
	TypeSingle  = 13
	TypeDouble  = 14
	TypeDecimal = 15
	TypeDate    = 16
	TypeGUID    = 17
	TypeString  = 18
)

// Bounds of field descriptions: fields an object, nesting.
const (
	maxFields     = 64
	maxFieldDepth = 4
)

// Event is one event: its kind, when (seconds since the trace's start,
// by the runtime's clock), which thread, and its payload (valid only
// during the callback).
type Event struct {
	Meta     *Meta
	Time     float64
	ThreadID uint64
	// StackID names the event's stack in the stream's stack blocks (0:
	// none).
	StackID uint32
	// Stack is that stack's return addresses, innermost first, when the
	// parser keeps stacks (Parser.KeepStacks) and has it (valid only
	// during the callback).
	Stack   []uint64
	Payload []byte
}

// TraceInfo is what the Trace object says.
type TraceInfo struct {
	PointerSize, PID, Processors uint32
	// QPCFrequency is the clock's ticks per second; QPCSync the clock at
	// the trace's start.
	QPCFrequency, QPCSync int64
}

// Parser reads one nettrace stream.
type Parser struct {
	lim   Limits
	r     *bufio.Reader
	pos   int64
	Info  TraceInfo
	meta  map[uint32]*Meta
	block []byte
	// Events counts the events read, Blocks the blocks, Stacks the
	// non-empty stacks of the stack blocks.
	Events, Blocks, Stacks int
	// onObject, when set, is told the offset after each object.
	onObject func(pos int64)

	// KeepStacks makes the parser keep the stacks of the stack blocks
	// so that each event carries its own (Event.Stack): those since the
	// latest sequence point (the runtime numbers stacks afresh after
	// each), at most maxStackAddrs addresses in all; stacks past that
	// are dropped (their events carry none) and counted in
	// StacksDropped.
	KeepStacks    bool
	StacksDropped int
	stacks        map[uint32][]uint64
	stackAddrs    int
}

// maxStackAddrs bounds the return addresses kept between two sequence
// points (2 MiB), maxFrames a stack's.
const (
	maxStackAddrs = 1 << 18
	maxFrames     = 256
)

// NewParser reads from r within lim (zero fields take DefaultLimits').
func NewParser(r io.Reader, lim Limits) *Parser {
	if lim.MaxBlock <= 0 {
		lim.MaxBlock = DefaultLimits.MaxBlock
	}
	if lim.MaxMetadata <= 0 {
		lim.MaxMetadata = DefaultLimits.MaxMetadata
	}
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = DefaultLimits.MaxBytes
	}
	return &Parser{lim: lim, r: bufio.NewReaderSize(r, 64<<10), meta: map[uint32]*Meta{}}
}

func (p *Parser) read(b []byte) error {
	if p.pos+int64(len(b)) > p.lim.MaxBytes {
		return fmt.Errorf("%w: more than %d bytes", ErrLimit, p.lim.MaxBytes)
	}
	n, err := io.ReadFull(p.r, b)
	p.pos += int64(n)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: the stream ends inside an object at byte %d", ErrFormat, p.pos)
	}
	return err
}

func (p *Parser) u8() (byte, error) {
	var b [1]byte
	err := p.read(b[:])
	return b[0], err
}

func (p *Parser) u32() (uint32, error) {
	var b [4]byte
	err := p.read(b[:])
	return binary.LittleEndian.Uint32(b[:]), err
}

func (p *Parser) expect(tag byte, what string) error {
	b, err := p.u8()
	if err != nil {
		return err
	}
	if b != tag {
		return fmt.Errorf("%w: byte %d is 0x%02x, not %s", ErrFormat, p.pos-1, b, what)
	}
	return nil
}

// FastSerialization tags.
const (
	tagNull      = 1
	tagBeginPriv = 5
	tagEnd       = 6
)

// Run parses the whole stream, calling fn for every event of an event
// block. It returns nil at the stream's proper end (its NullReference),
// io.EOF when the stream stopped between objects (a session cut short),
// or the first error.
func (p *Parser) Run(fn func(*Event)) error {
	var magic [8]byte
	if err := p.read(magic[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: empty stream", ErrFormat)
		}
		return err
	}
	if string(magic[:]) != "Nettrace" {
		return fmt.Errorf("%w: magic %q, not Nettrace", ErrFormat, magic[:])
	}
	n, err := p.u32()
	if err != nil {
		return err
	}
	const sig = "!FastSerialization.1"
	if n != uint32(len(sig)) {
		return fmt.Errorf("%w: serialization header of %d bytes", ErrFormat, n)
	}
	var s [len(sig)]byte
	if err := p.read(s[:]); err != nil {
		return err
	}
	if string(s[:]) != sig {
		return fmt.Errorf("%w: serialization header %q", ErrFormat, s[:])
	}
	for {
		tag, err := p.u8()
		if err != nil {
			return err // io.EOF: cut between objects
		}
		if tag == tagNull {
			return nil
		}
		if tag != tagBeginPriv {
			return fmt.Errorf("%w: object tag 0x%02x at byte %d", ErrFormat, tag, p.pos-1)
		}
		name, version, err := p.objectType()
		if err != nil {
			return err
		}
		if err := p.object(name, version, fn); err != nil {
			return err
		}
		if err := p.expect(tagEnd, "the end of "+name); err != nil {
			return err
		}
		if p.onObject != nil {
			p.onObject(p.pos)
		}
	}
}

func (p *Parser) objectType() (string, uint32, error) {
	if err := p.expect(tagBeginPriv, "a type"); err != nil {
		return "", 0, err
	}
	if err := p.expect(tagNull, "the type's type"); err != nil {
		return "", 0, err
	}
	version, err := p.u32()
	if err != nil {
		return "", 0, err
	}
	if _, err := p.u32(); err != nil { // minimum reader version
		return "", 0, err
	}
	n, err := p.u32()
	if err != nil {
		return "", 0, err
	}
	if n == 0 || n > 64 {
		return "", 0, fmt.Errorf("%w: type name of %d bytes", ErrFormat, n)
	}
	name := make([]byte, n)
	if err := p.read(name); err != nil {
		return "", 0, err
	}
	if err := p.expect(tagEnd, "the end of a type"); err != nil {
		return "", 0, err
	}
	return string(name), version, nil
}

func (p *Parser) object(name string, version uint32, fn func(*Event)) error {
	switch name {
	case "Trace":
		var b [48]byte
		if err := p.read(b[:]); err != nil {
			return err
		}
		// 16 bytes of wall-clock time, then the clock and the process.
		p.Info = TraceInfo{
			QPCSync:      int64(binary.LittleEndian.Uint64(b[16:])),
			QPCFrequency: int64(binary.LittleEndian.Uint64(b[24:])),
			PointerSize:  binary.LittleEndian.Uint32(b[32:]),
			PID:          binary.LittleEndian.Uint32(b[36:]),
			Processors:   binary.LittleEndian.Uint32(b[40:]),
		}
		if p.Info.QPCFrequency <= 0 {
			return fmt.Errorf("%w: clock frequency %d", ErrFormat, p.Info.QPCFrequency)
		}
		return nil
	case "EventBlock", "MetadataBlock", "StackBlock", "SPBlock":
		size, err := p.u32()
		if err != nil {
			return err
		}
		if size > uint32(p.lim.MaxBlock) {
			return fmt.Errorf("%w: %s of %d bytes (at most %d)", ErrLimit, name, size, p.lim.MaxBlock)
		}
		if pad := (4 - p.pos%4) % 4; pad > 0 {
			var z [3]byte
			if err := p.read(z[:pad]); err != nil {
				return err
			}
		}
		if cap(p.block) < int(size) {
			p.block = make([]byte, size)
		}
		b := p.block[:size]
		if err := p.read(b); err != nil {
			return err
		}
		p.Blocks++
		switch name {
		case "EventBlock":
			return p.events(b, false, fn)
		case "MetadataBlock":
			return p.events(b, true, nil)
		}
		if name == "StackBlock" {
			p.stackBlock(b)
		} else if name == "SPBlock" && p.stacks != nil {
			// The runtime numbers the stacks afresh after a sequence
			// point: those kept are no one's any more.
			clear(p.stacks)
			p.stackAddrs = 0
		}
		return nil
	}
	return fmt.Errorf("%w: unknown object %q (version %d)", ErrFormat, name, version)
}

// stackBlock counts a stack block's stacks (their first id and number,
// then each a size and that many bytes of return addresses, of the
// trace's pointer size) and keeps their addresses when KeepStacks.
func (p *Parser) stackBlock(b []byte) {
	c := &cursor{b: b}
	first := c.u32("first stack id")
	n := c.u32("stack count")
	for i := uint32(0); i < n && c.err == nil; i++ {
		size := c.u32("stack size")
		raw := c.take(int(size), "stack")
		if raw == nil || size == 0 {
			continue
		}
		p.Stacks++
		if p.KeepStacks {
			p.keepStack(first+i, raw)
		}
	}
}

func (p *Parser) keepStack(id uint32, raw []byte) {
	ptr := int(p.Info.PointerSize)
	if ptr != 4 && ptr != 8 {
		ptr = 8
	}
	k := min(len(raw)/ptr, maxFrames)
	if p.stacks == nil {
		p.stacks = map[uint32][]uint64{}
	}
	if old, ok := p.stacks[id]; ok {
		p.stackAddrs -= len(old)
		delete(p.stacks, id)
	}
	if p.stackAddrs+k > maxStackAddrs {
		p.StacksDropped++
		return
	}
	a := make([]uint64, k)
	for j := range a {
		if ptr == 8 {
			a[j] = binary.LittleEndian.Uint64(raw[j*8:])
		} else {
			a[j] = uint64(binary.LittleEndian.Uint32(raw[j*4:]))
		}
	}
	p.stacks[id] = a
	p.stackAddrs += k
}

// Compressed header flags.
const (
	flMetadataID = 1 << iota
	flCaptureThreadAndSequence
	flThreadID
	flStackID
	flActivityID
	flRelatedActivityID
	flSorted
	flDataLength
)

type cursor struct {
	b   []byte
	off int
	err error
}

func (c *cursor) fail(what string) {
	if c.err == nil {
		c.err = fmt.Errorf("%w: %s past the end of its block", ErrFormat, what)
	}
}

func (c *cursor) take(n int, what string) []byte {
	if c.err != nil || n < 0 || n > len(c.b)-c.off {
		c.fail(what)
		return nil
	}
	s := c.b[c.off : c.off+n]
	c.off += n
	return s
}

func (c *cursor) u8(what string) byte {
	if b := c.take(1, what); b != nil {
		return b[0]
	}
	return 0
}

func (c *cursor) u16(what string) uint16 {
	if b := c.take(2, what); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (c *cursor) u32(what string) uint32 {
	if b := c.take(4, what); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (c *cursor) u64(what string) uint64 {
	if b := c.take(8, what); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// varint reads a LEB128 number of at most 10 bytes.
func (c *cursor) varint(what string) uint64 {
	var v uint64
	for i := 0; i < 10; i++ {
		b := c.u8(what)
		if c.err != nil {
			return 0
		}
		v |= uint64(b&0x7f) << (7 * i)
		if b&0x80 == 0 {
			return v
		}
	}
	if c.err == nil {
		c.err = fmt.Errorf("%w: %s: a variable-length number of more than 10 bytes", ErrFormat, what)
	}
	return 0
}

type header struct {
	metaID    uint32
	seq       uint32
	captureTh uint64
	proc      uint32
	thread    uint64
	stack     uint32
	timestamp uint64
	size      uint32
}

// events reads the events of an event or metadata block.
func (p *Parser) events(b []byte, isMeta bool, fn func(*Event)) error {
	c := &cursor{b: b}
	hsize := int(c.u16("block header size"))
	flags := c.u16("block flags")
	if c.err != nil || hsize < 20 || hsize > len(b) {
		return fmt.Errorf("%w: block header of %d bytes in a block of %d", ErrFormat, hsize, len(b))
	}
	c.off = hsize
	compressed := flags&1 != 0
	var h header
	var ev Event
	for c.off < len(c.b) {
		if compressed {
			p.compressedHeader(c, &h)
		} else {
			p.plainHeader(c, &h)
		}
		payload := c.take(int(h.size), "event payload")
		if c.err != nil {
			return c.err
		}
		if !compressed {
			// Uncompressed events are padded to 4 bytes within the block.
			if pad := (4 - c.off%4) % 4; pad > 0 && c.off+pad <= len(c.b) {
				c.off += pad
			}
		}
		if isMeta {
			if err := p.addMeta(payload); err != nil {
				return err
			}
			continue
		}
		p.Events++
		m := p.meta[h.metaID]
		if m == nil || fn == nil {
			continue
		}
		ev = Event{Meta: m, ThreadID: h.thread, StackID: h.stack, Payload: payload,
			Time: float64(int64(h.timestamp)-p.Info.QPCSync) / float64(p.Info.QPCFrequency)}
		if p.stacks != nil && h.stack != 0 {
			ev.Stack = p.stacks[h.stack]
		}
		fn(&ev)
	}
	return nil
}

func (p *Parser) compressedHeader(c *cursor, h *header) {
	f := c.u8("event flags")
	if f&flMetadataID != 0 {
		h.metaID = uint32(c.varint("metadata id"))
	}
	if f&flCaptureThreadAndSequence != 0 {
		h.seq += uint32(c.varint("sequence number")) + 1
		h.captureTh = c.varint("capture thread")
		h.proc = uint32(c.varint("processor"))
	} else if h.metaID != 0 {
		h.seq++
	}
	if f&flThreadID != 0 {
		h.thread = c.varint("thread id")
	}
	if f&flStackID != 0 {
		h.stack = uint32(c.varint("stack id"))
	}
	h.timestamp += c.varint("timestamp")
	if f&flActivityID != 0 {
		c.take(16, "activity id")
	}
	if f&flRelatedActivityID != 0 {
		c.take(16, "related activity id")
	}
	if f&flDataLength != 0 {
		h.size = uint32(c.varint("payload size"))
	}
}

func (p *Parser) plainHeader(c *cursor, h *header) {
	c.u32("event size")
	h.metaID = c.u32("metadata id") & 0x7fffffff
	h.seq = c.u32("sequence number")
	h.thread = c.u64("thread id")
	h.captureTh = c.u64("capture thread")
	h.proc = c.u32("processor")
	h.stack = c.u32("stack id")
	h.timestamp = c.u64("timestamp")
	c.take(32, "activity ids")
	h.size = c.u32("payload size")
}

// addMeta records one metadata event: its id, the provider's name, the
// event's id, name, keywords, version and level (the field descriptions
// after them are not needed).
func (p *Parser) addMeta(b []byte) error {
	c := &cursor{b: b}
	id := c.u32("metadata id")
	prov := c.utf16z("provider name")
	eid := c.u32("event id")
	name := c.utf16z("event name")
	c.u64("keywords")
	ver := c.u32("event version")
	if c.err != nil {
		return c.err
	}
	if _, ok := p.meta[id]; !ok && len(p.meta) >= p.lim.MaxMetadata {
		return fmt.Errorf("%w: more than %d kinds of event", ErrLimit, p.lim.MaxMetadata)
	}
	m := &Meta{Provider: prov, EventID: eid, Version: ver, Name: name}
	// The level, then the field descriptions (none for the runtime's own
	// events, whose layouts are known by version): read when present,
	// dropped when malformed.
	c.u32("event level")
	if c.err == nil && c.off+4 <= len(c.b) {
		if f := c.fields(0); c.err == nil {
			m.Fields = f
		}
	}
	p.meta[id] = m
	return nil
}

// fields reads a field count and the fields: each its type code, an
// object's own fields, and its name.
func (c *cursor) fields(depth int) []Field {
	n := c.u32("field count")
	if c.err != nil {
		return nil
	}
	if n > maxFields || depth > maxFieldDepth {
		c.err = fmt.Errorf("%w: %d fields at depth %d", ErrFormat, n, depth)
		return nil
	}
	out := make([]Field, 0, n)
	for i := uint32(0); i < n && c.err == nil; i++ {
		f := Field{Type: c.u32("field type")}
		if f.Type == TypeObject {
			f.Fields = c.fields(depth + 1)
		}
		f.Name = c.utf16z("field name")
		out = append(out, f)
	}
	return out
}

// Value is one decoded field: its path ("Payload.Name") and its value,
// a number or a string.
type Value struct {
	Name   string
	Num    float64
	Str    string
	IsText bool
}

// Decode reads a self-describing event's payload by its fields, calling
// fn for each value (in order; strings at most 1024 characters). It
// stops at the first field it cannot read (an unknown type or the
// payload's end) and returns false then.
func (e *Event) Decode(fn func(Value)) bool {
	if e.Meta.Fields == nil {
		return false
	}
	c := &cursor{b: e.Payload}
	return decodeFields(c, e.Meta.Fields, "", fn) && c.err == nil
}

func decodeFields(c *cursor, fields []Field, prefix string, fn func(Value)) bool {
	for _, f := range fields {
		name := prefix + f.Name
		v := Value{Name: name}
		switch f.Type {
		case TypeObject:
			sub := name + "."
			if f.Name == "" {
				sub = prefix // an unnamed object: the payload's root
			}
			if !decodeFields(c, f.Fields, sub, fn) {
				return false
			}
			continue
		case TypeString:
			v.Str, v.IsText = c.utf16z(name), true
		case TypeBoolean, TypeInt32:
			v.Num = float64(int32(c.u32(name)))
		case TypeUInt32:
			v.Num = float64(c.u32(name))
		case TypeInt64:
			v.Num = float64(int64(c.u64(name)))
		case TypeUInt64:
			v.Num = float64(c.u64(name))
		case TypeSingle:
			v.Num = float64(math.Float32frombits(c.u32(name)))
		case TypeDouble:
			v.Num = math.Float64frombits(c.u64(name))
		case TypeByte, TypeSByte:
			v.Num = float64(c.u8(name))
		case TypeInt16, TypeUInt16, TypeChar:
			v.Num = float64(c.u16(name))
		default:
			return false
		}
		if c.err != nil {
			return false
		}
		fn(v)
	}
	return true
}

// utf16z reads a NUL-terminated UTF-16 string of at most 1024 units.
func (c *cursor) utf16z(what string) string {
	var u []uint16
	for {
		v := c.u16(what)
		if c.err != nil {
			return ""
		}
		if v == 0 {
			return string(utf16.Decode(u))
		}
		if len(u) == 1024 {
			c.err = fmt.Errorf("%w: %s longer than 1024 characters", ErrFormat, what)
			return ""
		}
		u = append(u, v)
	}
}
