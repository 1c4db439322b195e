package parquet

import "encoding/binary"

// The Thrift compact protocol, as far as a Parquet footer and page headers
// need it: structs of integers, booleans, binaries, lists and nested
// structs. A field's header carries the difference from the previous
// field's id in its upper four bits when that difference is 1 to 15, and its
// type in the lower four; integers are zigzag varints.

// Compact protocol type codes.
const (
	ctTrue   = 1
	ctFalse  = 2
	ctI32    = 5
	ctI64    = 6
	ctBinary = 8
	ctList   = 9
	ctStruct = 12
)

// compact appends a Thrift compact encoding to b. last holds, for each
// struct being written, the id of its last field.
type compact struct {
	b    []byte
	last []int16
	cur  int16
}

func (c *compact) field(id int16, typ byte) {
	if d := id - c.cur; d > 0 && d <= 15 {
		c.b = append(c.b, byte(d)<<4|typ)
	} else {
		c.b = append(c.b, typ)
		c.b = binary.AppendVarint(c.b, int64(id))
	}
	c.cur = id
}

func (c *compact) i32(id int16, v int32) {
	c.field(id, ctI32)
	c.b = binary.AppendVarint(c.b, int64(v))
}

func (c *compact) i64(id int16, v int64) {
	c.field(id, ctI64)
	c.b = binary.AppendVarint(c.b, v)
}

func (c *compact) boolean(id int16, v bool) {
	if v {
		c.field(id, ctTrue)
	} else {
		c.field(id, ctFalse)
	}
}

func (c *compact) binary(id int16, v string) {
	c.field(id, ctBinary)
	c.bytes(v)
}

// bytes appends a binary value without a field header (a list element).
func (c *compact) bytes(v string) {
	c.b = binary.AppendUvarint(c.b, uint64(len(v)))
	c.b = append(c.b, v...)
}

// begin opens a struct: the field id when it is a field, 0 when it is a
// list element (no header of its own).
func (c *compact) begin(id int16) {
	if id != 0 {
		c.field(id, ctStruct)
	}
	c.last = append(c.last, c.cur)
	c.cur = 0
}

// end closes the struct begin opened.
func (c *compact) end() {
	c.b = append(c.b, 0)
	c.cur = c.last[len(c.last)-1]
	c.last = c.last[:len(c.last)-1]
}

// list opens a list field of n elements of type elem; the elements follow
// with no headers of their own (structs through begin(0)).
func (c *compact) list(id int16, elem byte, n int) {
	c.field(id, ctList)
	if n < 15 {
		c.b = append(c.b, byte(n)<<4|elem)
		return
	}
	c.b = append(c.b, 0xf0|elem)
	c.b = binary.AppendUvarint(c.b, uint64(n))
}

// elemI32 appends a list element of type i32.
func (c *compact) elemI32(v int32) {
	c.b = binary.AppendVarint(c.b, int64(v))
}
