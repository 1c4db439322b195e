package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"

	"github.com/memdoctor/memdoctor/internal/sample"
	"github.com/memdoctor/memdoctor/internal/store/xor"
)

// maxChunkSamples bounds the samples of one chunk (XOR chunks count them in
// 16 bits). A head that would pass it is cut early, whatever the range.
const maxChunkSamples = 1 << 14

// headSeries is one series' samples in the head: the chunk it will become,
// already XOR-encoded, and the value the next head row is encoded against.
type headSeries struct {
	id         int64
	chunk      *xor.Chunk
	minT, maxT int64
	n          int
	last       uint64 // bits of the value of the last head row that held the series
}

// add appends a sample; a second sample at the same time (a series twice in
// one snapshot) is dropped and reported false.
func (hs *headSeries) add(t int64, v float64) bool {
	if hs.n > 0 && t <= hs.maxT {
		return false
	}
	if hs.n == 0 {
		hs.minT = t
	}
	hs.chunk.Append(t, v) // never full: cut at maxChunkSamples
	hs.maxT = t
	hs.n++
	return true
}

// layoutEntry remembers which series one position of the last appended
// snapshot was, so the next snapshot of the same collector resolves its ids by
// comparing strings instead of hashing them.
type layoutEntry struct {
	name   string
	labels sample.Labels
	id     int64
}

// instHead is the in-memory mirror of one instance's head rows, and the
// writer's caches for that instance.
type instHead struct {
	name string
	// The head rows as last synced: their first and last time and count.
	// Rows are only ever appended with increasing time or deleted all at
	// once by a cut, so these three identify the rows.
	first, last int64
	rows        int
	// window is the chunk-range index of the samples in memory; snapshots is
	// how many snapshots they came from (a bound on any series' count).
	window    int64
	snapshots int
	series    map[int64]*headSeries
	prevIDs   []int64 // series of the last head row, ascending
	// The instance's row in instances: whether it exists, and the time
	// range of its chunks (hasChunks false: none).
	known              bool
	hasChunks          bool
	chunkMin, chunkMax int64

	// Writer caches: series key -> id (nil until needed), last layout.
	keys   map[string]int64
	layout []layoutEntry
}

func newInstHead(name string) *instHead {
	return &instHead{name: name, series: map[int64]*headSeries{}}
}

// empty reports whether the head holds no sample in memory.
func (h *instHead) empty() bool { return h.snapshots == 0 }

// newest is the time of the newest sample of the instance, and false when
// it has none.
func (h *instHead) newest() (int64, bool) {
	if !h.empty() {
		var mx int64 = math.MinInt64
		for _, hs := range h.series {
			mx = max(mx, hs.maxT)
		}
		return mx, true
	}
	return h.chunkMax, h.hasChunks
}

// oldest is the time of the oldest sample in memory.
func (h *instHead) oldest() int64 {
	var mn int64 = math.MaxInt64
	for _, hs := range h.series {
		if hs.n > 0 {
			mn = min(mn, hs.minT)
		}
	}
	return mn
}

// get returns the head series of id, creating it.
func (h *instHead) get(id int64) *headSeries {
	hs := h.series[id]
	if hs == nil {
		hs = &headSeries{id: id, chunk: xor.New()}
		h.series[id] = hs
	}
	return hs
}

// resetSamples forgets the samples in memory (after a cut).
func (h *instHead) resetSamples() {
	h.series = map[int64]*headSeries{}
	h.prevIDs = nil
	h.snapshots = 0
	h.rows, h.first, h.last = 0, 0, 0
}

// Head row encoding (format version 1), one row per appended snapshot:
//
//	flags   byte: bit 0 set = an explicit series list follows
//	[n      uvarint: number of samples
//	 ids    n uvarints: first id, then the increase to each next id]
//	        (without bit 0: the series of the previous row of the head)
//	changed ceil(n/8) bytes, bit i (LSB first) set = sample i's value
//	        differs from the series' value in its previous head row
//	values  for each changed sample: x = bits(value) XOR bits(previous)
//	        (previous = 0 for the series' first row in this head), as one
//	        byte lead<<4|trail (zero bytes dropped at each end) followed by
//	        the 8-lead-trail remaining bytes of x, most significant first.
const rowExplicitIDs = 1

// rowSample is one sample of a head row being encoded.
type rowSample struct {
	hs   *headSeries
	bits uint64
}

// encodeRow appends the head row of rs (ascending, distinct ids) to dst and
// advances the encoding state.
func (h *instHead) encodeRow(dst []byte, rs []rowSample) []byte {
	same := len(rs) == len(h.prevIDs)
	for i := 0; same && i < len(rs); i++ {
		same = rs[i].hs.id == h.prevIDs[i]
	}
	if same {
		dst = append(dst, 0)
	} else {
		dst = append(dst, rowExplicitIDs)
		dst = binary.AppendUvarint(dst, uint64(len(rs)))
		var prev int64
		h.prevIDs = h.prevIDs[:0]
		for _, r := range rs {
			dst = binary.AppendUvarint(dst, uint64(r.hs.id-prev))
			prev = r.hs.id
			h.prevIDs = append(h.prevIDs, r.hs.id)
		}
	}
	mapAt := len(dst)
	for range (len(rs) + 7) / 8 {
		dst = append(dst, 0)
	}
	for i, r := range rs {
		x := r.bits ^ r.hs.last
		r.hs.last = r.bits
		if x == 0 {
			continue
		}
		dst[mapAt+i/8] |= 1 << (i % 8)
		lead := bits.LeadingZeros64(x) / 8
		trail := bits.TrailingZeros64(x) / 8
		dst = append(dst, byte(lead<<4|trail))
		for sh := 8*(8-lead) - 8; sh >= 8*trail; sh -= 8 {
			dst = append(dst, byte(x>>sh))
		}
	}
	return dst
}

// errDamaged describes damaged stored data (a head row, a chunk).
type errDamaged string

func (e errDamaged) Error() string { return string(e) }

// decodeRow applies one head row at time t to the head.
func (h *instHead) decodeRow(t int64, p []byte) error {
	if len(p) == 0 {
		return errDamaged("empty row")
	}
	flags := p[0]
	p = p[1:]
	if flags&^rowExplicitIDs != 0 {
		return errDamaged(fmt.Sprintf("unknown flags %#x", flags))
	}
	if flags&rowExplicitIDs != 0 {
		n, k := binary.Uvarint(p)
		if k <= 0 || n > uint64(len(p)) {
			return errDamaged("bad series count")
		}
		p = p[k:]
		h.prevIDs = h.prevIDs[:0]
		var id int64
		for i := range n {
			d, k := binary.Uvarint(p)
			if k <= 0 || d > math.MaxInt64/2 || (i > 0 && d == 0) || (i == 0 && d == 0) {
				return errDamaged("bad series id")
			}
			p = p[k:]
			id += int64(d)
			if id <= 0 {
				return errDamaged("bad series id")
			}
			h.prevIDs = append(h.prevIDs, id)
		}
	} else if len(h.prevIDs) == 0 {
		return errDamaged("row refers to a previous row the head does not have")
	}
	ids := h.prevIDs
	nmap := (len(ids) + 7) / 8
	if len(p) < nmap {
		return errDamaged("short change map")
	}
	changed, p := p[:nmap], p[nmap:]
	if h.snapshots >= maxChunkSamples {
		return errDamaged("more rows than a head holds")
	}
	for i, id := range ids {
		hs := h.get(id)
		if changed[i/8]&(1<<(i%8)) != 0 {
			if len(p) == 0 {
				return errDamaged("short value")
			}
			lead, trail := int(p[0]>>4), int(p[0]&15)
			if lead+trail > 7 || len(p) < 1+8-lead-trail {
				return errDamaged("bad value header")
			}
			var x uint64
			for _, b := range p[1 : 1+8-lead-trail] {
				x = x<<8 | uint64(b)
			}
			p = p[1+8-lead-trail:]
			x <<= 8 * trail
			if x == 0 {
				return errDamaged("changed value with no change")
			}
			hs.last ^= x
		}
		if !hs.add(t, math.Float64frombits(hs.last)) {
			return errDamaged("sample not after the previous one")
		}
	}
	if len(p) != 0 {
		return errDamaged("trailing bytes")
	}
	h.snapshots++
	return nil
}

// floorDiv is a/b rounded down (b > 0); b == 0 returns 0.
func floorDiv(a, b int64) int64 {
	if b == 0 {
		return 0
	}
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// headStatus is what the head table holds for one instance.
type headStatus struct {
	first, last int64
	rows        int
}

// querier is what a transaction offers.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// headStatuses reads the head rows' identity per instance (one instance, or
// all for "").
func headStatuses(tx querier, instance string) (map[string]headStatus, error) {
	q := "SELECT instance, min(t), max(t), count(*) FROM head GROUP BY instance"
	var args []any
	if instance != "" {
		q = "SELECT instance, min(t), max(t), count(*) FROM head WHERE instance = ? GROUP BY instance"
		args = append(args, instance)
	}
	rows, err := tx.QueryContext(context.Background(), q, args...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }() // rows.Err is checked
	st := map[string]headStatus{}
	for rows.Next() {
		var name string
		var h headStatus
		if err := rows.Scan(&name, &h.first, &h.last, &h.rows); err != nil {
			return nil, err
		}
		st[name] = h
	}
	return st, rows.Err()
}

// syncHeads brings the head mirrors of the instances the transaction sees
// up to date (one instance, or every instance for ""), reading
// only the head rows added since the last sync when it can. Callers hold
// s.mu.
func (s *Store) syncHeads(tx querier, instance string) (map[string]*instHead, error) {
	ctx := context.Background()
	if s.sealed && instance != "" {
		// Nobody writes a sealed store: a head loaded once is current.
		if h := s.heads[instance]; h != nil {
			return map[string]*instHead{instance: h}, nil
		}
	}
	if err := s.checkGen(tx); err != nil {
		return nil, err
	}
	status, err := headStatuses(tx, instance)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	if instance != "" {
		names[instance] = true
	} else {
		rows, err := tx.QueryContext(ctx, "SELECT name FROM instances")
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				_ = rows.Close()
				return nil, err
			}
			names[n] = true
		}
		_ = rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		for n := range status {
			names[n] = true
		}
		for n := range s.heads {
			names[n] = true
		}
	}
	out := make(map[string]*instHead, len(names))
	for n := range names {
		h, err := s.syncHead(tx, n, status[n])
		if err != nil {
			return nil, err
		}
		out[n] = h
	}
	return out, nil
}

// checkGen drops every cached series id when another process deleted
// series since the last look. Callers hold s.mu.
func (s *Store) checkGen(tx querier) error {
	var genText string
	if err := tx.QueryRowContext(context.Background(), "SELECT value FROM meta WHERE key = 'series_gen'").Scan(&genText); err != nil {
		return err
	}
	if gen, _ := strconv.ParseInt(genText, 10, 64); gen != s.gen {
		// Series were deleted by another process: the id caches may name
		// series that no longer exist.
		for _, h := range s.heads {
			h.keys, h.layout = nil, nil
		}
		s.gen = gen
	}
	return nil
}

// syncHeadOf is syncHeads for one instance after checkGen, within the
// same transaction.
func (s *Store) syncHeadOf(tx querier, instance string) (*instHead, error) {
	status, err := headStatuses(tx, instance)
	if err != nil {
		return nil, err
	}
	return s.syncHead(tx, instance, status[instance])
}

// syncHead brings one instance's head mirror to st, the head table's state.
// On error the mirror is dropped, to be read again whole next time.
func (s *Store) syncHead(tx querier, name string, st headStatus) (*instHead, error) {
	h, err := s.syncHeadOnce(tx, name, st)
	if err != nil {
		delete(s.heads, name)
		return nil, err
	}
	return h, nil
}

func (s *Store) syncHeadOnce(tx querier, name string, st headStatus) (*instHead, error) {
	h := s.heads[name]
	switch {
	case h != nil && h.rows == st.rows && h.first == st.first && h.last == st.last && (h.rows > 0 || h.empty()):
		return h, nil
	case h != nil && h.rows > 0 && st.rows > h.rows && h.first == st.first && st.last > h.last:
		if err := s.loadRows(tx, h, h.last); err != nil {
			return nil, err
		}
		h.rows, h.last = st.rows, st.last
		return h, nil
	}
	// Full reload: new to us, or cut by another process.
	if h == nil {
		h = newInstHead(name)
	}
	h.resetSamples()
	ctx := context.Background()
	var mn, mx sql.NullInt64
	err := tx.QueryRowContext(ctx, "SELECT min_t, max_t FROM instances WHERE name = ?", name).Scan(&mn, &mx)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		h.known = false
	case err != nil:
		return nil, err
	default:
		h.known = true
	}
	h.hasChunks = mn.Valid && mx.Valid
	h.chunkMin, h.chunkMax = mn.Int64, mx.Int64
	if st.rows > 0 {
		if err := s.loadRows(tx, h, math.MinInt64); err != nil {
			return nil, err
		}
	}
	h.rows, h.first, h.last = st.rows, st.first, st.last
	if h.known || h.rows > 0 {
		s.heads[name] = h
	} else {
		delete(s.heads, name) // a name only asked about, or an instance deleted
	}
	return h, nil
}

// loadRows decodes the instance's head rows after time after.
func (s *Store) loadRows(tx querier, h *instHead, after int64) error {
	rows, err := tx.QueryContext(context.Background(),
		"SELECT t, data FROM head WHERE instance = ? AND t > ? ORDER BY t", h.name, after)
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }() // rows.Err is checked
	for rows.Next() {
		var t int64
		var data sql.RawBytes
		if err := rows.Scan(&t, &data); err != nil {
			return err
		}
		if h.empty() {
			h.window = floorDiv(t, s.rangeMS)
		}
		if err := h.decodeRow(t, data); err != nil {
			return corruptf(s.path, fmt.Sprintf("head row of instance %q at %d is damaged (%v); %s", h.name, t, err, recoverHint(s.path)))
		}
	}
	return rows.Err()
}
