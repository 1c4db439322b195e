package heapprof

import (
	"compress/gzip"
	"encoding/binary"
	"io"
)

// Pprof is a heap profile in pprof's format (profile.proto, gzipped), the
// few messages memdoctor writes encoded here: the pprof library's package,
// linked only for them, compiled regular expressions and built tables at
// init that every command paid before main.
type Pprof struct {
	// SampleTypes and PeriodType are [type, unit] pairs.
	SampleTypes       [][2]string
	PeriodType        [2]string
	DefaultSampleType string
	Period            int64
	TimeNanos         int64
	Samples           []PprofSample
	Mappings          []PprofMapping
	Locations         []PprofLocation
	Functions         []PprofFunction
}

// PprofSample is one stack (location IDs, the leaf first) and its values,
// one per sample type.
type PprofSample struct {
	Locations []uint64
	Values    []int64
}

// PprofMapping is an object mapped at [Start, Limit) from Offset in File.
type PprofMapping struct {
	ID, Start, Limit, Offset uint64
	File                     string
	HasFunctions             bool
}

// PprofLocation is an address, in a mapping (0: none), at a line of a
// function (Function 0: none).
type PprofLocation struct {
	ID, Mapping, Address uint64
	Function             uint64
	Line                 int64
}

// PprofFunction is a function's names and file.
type PprofFunction struct {
	ID                     uint64
	Name, SystemName, File string
}

// The field numbers of profile.proto's messages that Write encodes.
const (
	fProfileSampleType  = 1
	fProfileSample      = 2
	fProfileMapping     = 3
	fProfileLocation    = 4
	fProfileFunction    = 5
	fProfileStringTable = 6
	fProfileTimeNanos   = 9
	fProfilePeriodType  = 11
	fProfilePeriod      = 12
	fProfileDefaultType = 14

	fValueTypeType = 1
	fValueTypeUnit = 2

	fSampleLocation = 1
	fSampleValue    = 2

	fMappingID           = 1
	fMappingStart        = 2
	fMappingLimit        = 3
	fMappingOffset       = 4
	fMappingFile         = 5
	fMappingHasFunctions = 7

	fLocationID      = 1
	fLocationMapping = 2
	fLocationAddress = 3
	fLocationLine    = 4

	fLineFunction = 1
	fLineLine     = 2

	fFunctionID         = 1
	fFunctionName       = 2
	fFunctionSystemName = 3
	fFunctionFile       = 4
)

// pbuf appends protobuf wire format.
type pbuf []byte

func (b pbuf) varint(field int, v uint64) pbuf {
	if v == 0 {
		return b // proto3: a zero scalar is not written
	}
	b = binary.AppendUvarint(b, uint64(field)<<3)
	return binary.AppendUvarint(b, v)
}

func (b pbuf) bytes(field int, p []byte) pbuf {
	b = binary.AppendUvarint(b, uint64(field)<<3|2)
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

// packed appends a packed repeated varint field.
func (b pbuf) packed(field int, vs []uint64, tmp pbuf) (pbuf, pbuf) {
	if len(vs) == 0 {
		return b, tmp
	}
	tmp = tmp[:0]
	for _, v := range vs {
		tmp = binary.AppendUvarint(tmp, v)
	}
	return b.bytes(field, tmp), tmp
}

// Write writes p gzipped, as pprof reads it.
func (p *Pprof) Write(w io.Writer) error {
	strs := []string{""}
	index := map[string]uint64{"": 0}
	str := func(s string) uint64 {
		i, ok := index[s]
		if !ok {
			i = uint64(len(strs))
			index[s] = i
			strs = append(strs, s)
		}
		return i
	}
	var b, msg, tmp pbuf
	vt := func(field int, t [2]string) {
		msg = msg[:0].varint(fValueTypeType, str(t[0])).varint(fValueTypeUnit, str(t[1]))
		b = b.bytes(field, msg)
	}
	for _, t := range p.SampleTypes {
		vt(fProfileSampleType, t)
	}
	vals := make([]uint64, 0, len(p.SampleTypes))
	for _, s := range p.Samples {
		msg = msg[:0]
		msg, tmp = msg.packed(fSampleLocation, s.Locations, tmp)
		vals = vals[:0]
		for _, v := range s.Values {
			vals = append(vals, uint64(v))
		}
		msg, tmp = msg.packed(fSampleValue, vals, tmp)
		b = b.bytes(fProfileSample, msg)
	}
	for _, m := range p.Mappings {
		msg = msg[:0].varint(fMappingID, m.ID).varint(fMappingStart, m.Start).varint(fMappingLimit, m.Limit).
			varint(fMappingOffset, m.Offset).varint(fMappingFile, str(m.File))
		if m.HasFunctions {
			msg = msg.varint(fMappingHasFunctions, 1)
		}
		b = b.bytes(fProfileMapping, msg)
	}
	for _, l := range p.Locations {
		msg = msg[:0].varint(fLocationID, l.ID).varint(fLocationMapping, l.Mapping).varint(fLocationAddress, l.Address)
		if l.Function != 0 {
			tmp = tmp[:0].varint(fLineFunction, l.Function).varint(fLineLine, uint64(l.Line))
			msg = msg.bytes(fLocationLine, tmp)
		}
		b = b.bytes(fProfileLocation, msg)
	}
	for _, f := range p.Functions {
		msg = msg[:0].varint(fFunctionID, f.ID).varint(fFunctionName, str(f.Name)).
			varint(fFunctionSystemName, str(f.SystemName)).varint(fFunctionFile, str(f.File))
		b = b.bytes(fProfileFunction, msg)
	}
	b = b.varint(fProfileTimeNanos, uint64(p.TimeNanos))
	vt(fProfilePeriodType, p.PeriodType)
	b = b.varint(fProfilePeriod, uint64(p.Period))
	b = b.varint(fProfileDefaultType, str(p.DefaultSampleType))
	for _, s := range strs { // last: every string above is in it
		b = b.bytes(fProfileStringTable, []byte(s))
	}
	z := gzip.NewWriter(w)
	if _, err := z.Write(b); err != nil {
		return err
	}
	return z.Close()
}
