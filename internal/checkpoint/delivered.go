package checkpoint

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// The delivered sets: what each stream delivered within the period it may
// ask again (cursor.Delivered), so that a recheck, a restarted chain or a
// resume delivers only what is new. They live in the bucket "delivered",
// one sub-bucket per stream (the stream's key), one value per commit and
// span of record time: the key is the span's start in Unix milliseconds (8
// bytes, big-endian, so keys sort by time) and a sequence number of the
// sub-bucket (8 bytes: a commit appends, it never rewrites what an earlier
// one stored), the value a version byte and then one fixed-size entry per
// record, sorted by time and hash:
//
//   - version 3 (byte 0x3c, written now): the span is an hour; an entry
//     is the record's millisecond within the hour (4 bytes) and its id
//     hash (8 bytes); the value ends with a CRC-32C (Castagnoli, 4 bytes,
//     big-endian) of the span's start (the key's first 8 bytes) and of
//     the rest of the value.
//   - version 2 (read only, written by earlier collectors): version 3
//     without the checksum.
//   - version 1 (read only): the span is a minute; an entry is the
//     millisecond within the minute (2 bytes) and the id hash.
//
// bbolt checksums nothing of a value: the checksum is what tells a
// damaged value (a flipped bit on disk) from a sound one. A damaged value
// is never an error that stops a stream, and never read: it counts as not
// delivered (DB.DamagedValues), so its records are delivered again
// when their period is asked again (a copy, never a loss), and the
// per-minute counts a recheck compares with the server's are not raised
// by it. Version 3's byte differs from 1 and 2 in five bits, so that a
// few flipped bits never make a checked value read as an unchecked one.
// Values of versions 1 and 2 stay unchecked until the horizon prunes them.
//
// An hour, not a minute: a commit writes one value per span its records
// touch, and bbolt rewrites every leaf page a transaction puts into. A
// page of a window served in no order touches every minute of the window,
// so minute values made a commit of a 2-day window rewrite thousands of
// pages (a full-scale backfill held 130 MB in one transaction) and held
// two records a value; hour values make it 48 puts. A file without the
// bucket (older collectors) has empty sets; an older collector ignores the
// bucket.
var bucketDelivered = []byte("delivered")

const (
	deliveredV1      = 1    // minute spans, 10-byte entries
	deliveredV2      = 2    // hour spans, 12-byte entries
	deliveredV3      = 0x3c // version 2 with a CRC-32C trailer
	deliveredCRC     = 4    // bytes of the trailer
	minuteMillis     = int64(time.Minute / time.Millisecond)
	hourMillis       = int64(time.Hour / time.Millisecond)
	entryV1, entryV2 = 10, 12
)

// DeliveredBytesPerRecord is what the checkpoint file keeps per record of a
// delivered set, besides bbolt's own overhead (about 40 bytes per stream,
// commit and hour of record time).
const DeliveredBytesPerRecord = entryV2

func spanKey(ms, span int64) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(ms-floorMod(ms, span)))
}

// floorMod is ms mod m in [0, m).
func floorMod(ms, m int64) int64 {
	r := ms % m
	if r < 0 {
		r += m
	}
	return r
}

func compareDelivered(a, b cursor.Delivered) int {
	if c := cmp.Compare(a.Time, b.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.Hash, b.Hash)
}

// spanValue is one stored value of a delivered set: the entries of one
// commit in one span of record time, sorted.
type spanValue struct {
	start int64  // the span's start, Unix milliseconds
	span  int64  // its length in milliseconds
	width int    // bytes an entry
	es    []byte // the entries, without the version byte
}

// errDamagedSpan: a stored value of a delivered set fails its checksum or
// its layout.
var errDamagedSpan = fmt.Errorf("damaged delivered-set value: %w", ErrCorrupt)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// spanSum is the checksum of a version 3 value of the span at start,
// without its trailer.
func spanSum(start int64, body []byte) uint32 {
	return crc32.Update(crc32.Checksum(binary.BigEndian.AppendUint64(nil, uint64(start)), castagnoli), castagnoli, body)
}

func parseSpan(start int64, v []byte) (spanValue, error) {
	if len(v) > 0 {
		switch v[0] {
		case deliveredV3:
			n := len(v) - deliveredCRC
			if n >= 1 && (n-1)%entryV2 == 0 && binary.BigEndian.Uint32(v[n:]) == spanSum(start, v[:n]) {
				return spanValue{start: start, span: hourMillis, width: entryV2, es: v[1:n]}, nil
			}
		case deliveredV2:
			if (len(v)-1)%entryV2 == 0 {
				return spanValue{start: start, span: hourMillis, width: entryV2, es: v[1:]}, nil
			}
		case deliveredV1:
			if (len(v)-1)%entryV1 == 0 {
				return spanValue{start: start, span: minuteMillis, width: entryV1, es: v[1:]}, nil
			}
		}
	}
	return spanValue{}, fmt.Errorf("the span at %s: %w", time.UnixMilli(start).UTC().Format(time.RFC3339), errDamagedSpan)
}

func (s spanValue) len() int { return len(s.es) / s.width }

func (s spanValue) at(i int) cursor.Delivered {
	e := s.es[i*s.width:]
	if s.width == entryV1 {
		return cursor.Delivered{Time: s.start + int64(binary.BigEndian.Uint16(e)), Hash: binary.BigEndian.Uint64(e[2:])}
	}
	return cursor.Delivered{Time: s.start + int64(binary.BigEndian.Uint32(e)), Hash: binary.BigEndian.Uint64(e[4:])}
}

// search is the index of the first entry at or after ms.
func (s spanValue) search(ms int64) int {
	return sort.Search(s.len(), func(i int) bool { return s.at(i).Time >= ms })
}

// in is the range of entries with times in [lo, hi).
func (s spanValue) in(lo, hi int64) (int, int) {
	i, j := 0, s.len()
	if lo > s.start {
		i = s.search(lo)
	}
	if hi < s.start+s.span {
		j = s.search(hi)
	}
	return i, max(i, j)
}

func encodeSpan(start int64, es []cursor.Delivered) []byte {
	v := make([]byte, 1, 1+len(es)*entryV2+deliveredCRC)
	v[0] = deliveredV3
	for _, e := range es {
		v = binary.BigEndian.AppendUint32(v, uint32(e.Time-start))
		v = binary.BigEndian.AppendUint64(v, e.Hash)
	}
	return binary.BigEndian.AppendUint32(v, spanSum(start, v))
}

// applyDelivered adds adds to the delivered set of the stream key.
func applyDelivered(tx *bolt.Tx, key []byte, adds []cursor.Delivered) error {
	if len(adds) == 0 {
		return nil
	}
	root, err := tx.CreateBucketIfNotExists(bucketDelivered)
	if err != nil {
		return err
	}
	b, err := root.CreateBucketIfNotExists(key)
	if err != nil {
		return err
	}
	return putSpans(b, adds)
}

// putSpans adds adds to the set of spans in b (a delivered set, or a
// sink's held set of a stream: heldsets.go).
func putSpans(b *bolt.Bucket, adds []cursor.Delivered) error {
	// Keys mostly come in order (an hour's values follow each other, and a
	// backfill moves forward): pages split full, not half-empty.
	b.FillPercent = 0.9
	adds = slices.SortedFunc(slices.Values(adds), compareDelivered)
	for len(adds) > 0 {
		start := adds[0].Time - floorMod(adds[0].Time, hourMillis)
		n := 1
		for n < len(adds) && adds[n].Time < start+hourMillis {
			n++
		}
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		k := binary.BigEndian.AppendUint64(spanKey(start, hourMillis), seq)
		if err := b.Put(k, encodeSpan(start, adds[:n])); err != nil {
			return err
		}
		adds = adds[n:]
	}
	return nil
}

// pruneDelivered forgets the spans of the stream key that end at or
// before cutoff: no period before it can be asked again.
func pruneDelivered(tx *bolt.Tx, key []byte, cutoff time.Time) error {
	root := tx.Bucket(bucketDelivered)
	if root == nil || cutoff.IsZero() {
		return nil
	}
	b := root.Bucket(key)
	if b == nil {
		return nil
	}
	return pruneSpans(b, cutoff)
}

// pruneSpans forgets the spans in b that end at or before cutoff.
func pruneSpans(b *bolt.Bucket, cutoff time.Time) error {
	cut := cutoff.UnixMilli()
	var del [][]byte
	c := b.Cursor()
	for k, v := c.First(); len(k) >= 8; k, v = c.Next() {
		start := int64(binary.BigEndian.Uint64(k[:8]))
		if start >= cut {
			break
		}
		span := hourMillis
		if len(v) > 0 && v[0] == deliveredV1 {
			span = minuteMillis
		}
		if start+span <= cut {
			del = append(del, bytes.Clone(k))
		}
	}
	for _, k := range del {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// deliveredCutoff is where the delivered set of a stream in state s may
// be cut: its watermark, or the start of its oldest window log entry when
// that is earlier (a logged window may be rechecked).
func deliveredCutoff(tx *bolt.Tx, key []byte, s State) time.Time {
	cutoff := s.Watermark
	if s.InFlight != nil && s.InFlight.Window.Start.Before(cutoff) {
		cutoff = s.InFlight.Window.Start
	}
	if root := tx.Bucket(bucketWindows); root != nil {
		if b := root.Bucket(key); b != nil {
			if k, _ := b.Cursor().First(); len(k) == 8 {
				if first := keyTime(k); first.Before(cutoff) {
					cutoff = first
				}
			}
		}
	}
	return cutoff
}

// deliveredIn returns the delivered set of k for record times in [from,
// to), as committed: the plain read the tests and the horizon benchmark
// check the others against (a poller asks DeliveredOf).
func (d *DB) deliveredIn(ctx context.Context, k record.Stream, from, to time.Time) ([]cursor.Delivered, error) {
	var out []cursor.Delivered
	lo, hi := from.UnixMilli(), to.UnixMilli()
	err := d.eachSpan(ctx, k, lo, hi, func(s spanValue) {
		i, j := s.in(lo, hi)
		for ; i < j; i++ {
			out = append(out, s.at(i))
		}
	})
	return out, err
}

// DeliveredOf returns how many records of each of keys the delivered set
// of k holds, as committed (counts[i] for keys[i]; a key given twice gets
// its count twice): what asking again must not deliver twice. It reads
// only the record times keys span and keeps only their counts, so a page's
// look-up costs the page's keys in memory, whatever the window holds.
func (d *DB) DeliveredOf(ctx context.Context, k record.Stream, keys []cursor.Delivered) ([]int, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	lo, hi := keys[0].Time, keys[0].Time
	want := make(map[cursor.Delivered]int, len(keys))
	for _, key := range keys {
		lo, hi = min(lo, key.Time), max(hi, key.Time)
		want[key] = 0
	}
	err := d.eachSpan(ctx, k, lo, hi+1, func(s spanValue) {
		i, j := s.in(lo, hi+1)
		for ; i < j; i++ {
			if n, ok := want[s.at(i)]; ok {
				want[s.at(i)] = n + 1
			}
		}
	})
	if err != nil {
		return nil, err
	}
	counts := make([]int, len(keys))
	for i, key := range keys {
		counts[i] = want[key]
	}
	return counts, nil
}

// eachSpan calls fn with every stored value of the delivered set of k
// whose span starts before hi and ends after lo (Unix milliseconds), in
// the order of their keys, within one read transaction.
func (d *DB) eachSpan(ctx context.Context, k record.Stream, lo, hi int64, fn func(spanValue)) error {
	if err := d.usable(ctx); err != nil {
		return fmt.Errorf("load delivered set of %s: %w", k, err)
	}
	if err := validateKey(k); err != nil {
		return fmt.Errorf("load delivered set: %w", err)
	}
	err := d.view(func(tx *bolt.Tx) error {
		b := deliveredBucket(tx, k)
		if b == nil {
			return nil
		}
		// Every span is at most an hour and starts on its own length, so
		// no value before lo's hour reaches lo.
		// What the read maps: the path to its first span, then its spans
		// (letGo).
		mapped := 4 * int64(d.bdb.Info().PageSize)
		c := b.Cursor()
		for key, v := c.Seek(spanKey(lo, hourMillis)); len(key) >= 8; key, v = c.Next() {
			mapped += int64(len(key) + len(v))
			start := int64(binary.BigEndian.Uint64(key[:8]))
			if start >= hi {
				break
			}
			s, err := parseSpan(start, v)
			if err != nil {
				d.damaged(k, key, err)
				continue
			}
			if s.start+s.span > lo {
				fn(s)
			}
		}
		// The pages the reads mapped are let go of as they add up, not
		// at the next commit: a backfill reads a set again for every page
		// it asks again, and what those reads map between two commits (up
		// to 40 MiB at full scale) counted in resident memory (DB.letGo).
		d.letGo(tx, mapped)
		return nil
	})
	if err != nil {
		return fmt.Errorf("checkpoint file %s: delivered set of %s: %w", d.path, k, err)
	}
	return nil
}

func deliveredBucket(tx *bolt.Tx, k record.Stream) *bolt.Bucket {
	root := tx.Bucket(bucketDelivered)
	if root == nil {
		return nil
	}
	return root.Bucket(encodeKey(k))
}

// DeliveredEnd returns a time past the latest record time in the
// delivered set of k (zero when the set is empty): no record at or after
// it was delivered, as committed.
func (d *DB) DeliveredEnd(ctx context.Context, k record.Stream) (time.Time, error) {
	if err := d.usable(ctx); err != nil {
		return time.Time{}, fmt.Errorf("load delivered set of %s: %w", k, err)
	}
	if err := validateKey(k); err != nil {
		return time.Time{}, fmt.Errorf("load delivered set: %w", err)
	}
	var end int64
	found := false
	err := d.view(func(tx *bolt.Tx) error {
		b := deliveredBucket(tx, k)
		if b == nil {
			return nil
		}
		// The last values hold the latest times: those whose span may
		// still reach past the latest entry seen (an hour before it).
		c := b.Cursor()
		for key, v := c.Last(); len(key) >= 8; key, v = c.Prev() {
			s, err := parseSpan(int64(binary.BigEndian.Uint64(key[:8])), v)
			if err != nil {
				d.damaged(k, key, err)
				continue
			}
			if found && s.start+hourMillis <= end {
				break
			}
			if n := s.len(); n > 0 {
				end, found = max(end, s.at(n-1).Time+1), true
			}
		}
		return nil
	})
	if err != nil || !found {
		if err != nil {
			err = fmt.Errorf("checkpoint file %s: delivered set of %s: %w", d.path, k, err)
		}
		return time.Time{}, err
	}
	return time.UnixMilli(end), nil
}

// DeliveredCounts returns how many records of the delivered set of k lie
// in each minute of record time that [from, to) touches, cut to [from,
// to): counts[i] is the count in [max(from, m+i min), min(to, m+(i+1)
// min)), m the start of from's minute. A recheck compares them with the
// server's counts of the same periods to find where a window grew (the
// counts of the delivered set, as committed, never exceed what was
// delivered).
func (d *DB) DeliveredCounts(ctx context.Context, k record.Stream, from, to time.Time) ([]int64, error) {
	lo, hi := from.UnixMilli(), to.UnixMilli()
	if hi <= lo {
		return nil, nil
	}
	first := lo - floorMod(lo, minuteMillis)
	counts := make([]int64, (hi-first+minuteMillis-1)/minuteMillis)
	err := d.eachSpan(ctx, k, lo, hi, func(s spanValue) {
		i, j := s.in(lo, hi)
		for i < j {
			// The entries of one minute at a time: its end found by search.
			m := floorMod(s.at(i).Time, minuteMillis)
			m = s.at(i).Time - m
			e := j
			if m+minuteMillis < s.start+s.span {
				e = min(j, max(i+1, s.search(m+minuteMillis)))
			}
			counts[(m-first)/minuteMillis] += int64(e - i)
			i = e
		}
	})
	if err != nil {
		return nil, err
	}
	return counts, nil
}

// damagedValues counts the values of every delivered set and every
// sink's held set in tx that fail their checksum or layout.
func damagedValues(tx *bolt.Tx) int {
	n := 0
	spans := func(b *bolt.Bucket) error {
		return b.ForEach(func(key, v []byte) error {
			if len(key) < 8 {
				n++
			} else if _, err := parseSpan(int64(binary.BigEndian.Uint64(key[:8])), v); err != nil {
				n++
			}
			return nil
		})
	}
	if root := tx.Bucket(bucketDelivered); root != nil {
		_ = root.ForEachBucket(func(k []byte) error { return spans(root.Bucket(k)) })
	}
	if root := tx.Bucket(bucketHeld); root != nil {
		_ = root.ForEachBucket(func(name []byte) error {
			sb := root.Bucket(name)
			return sb.ForEachBucket(func(k []byte) error { return spans(sb.Bucket(k)) })
		})
	}
	return n
}

// damaged reports a damaged value of the delivered set of k, stored under
// key, once per value: it is logged and counted (DamagedValues).
func (d *DB) damaged(k record.Stream, key []byte, err error) {
	if !d.firstDamage(string(encodeKey(k)) + string(key)) {
		return
	}
	if d.log != nil {
		d.log.Warn("checkpoint: a value of a stream's delivered set is damaged (checksum); its records count as not delivered, and are delivered again when their period is asked again",
			"path", d.path, "source", k.Source, "account", k.Account, "err", err)
	}
}

// firstDamage counts the damaged value id (its set and key) and reports
// whether it is the first time since Open.
func (d *DB) firstDamage(id string) bool {
	d.damageMu.Lock()
	defer d.damageMu.Unlock()
	if _, seen := d.damagedSeen[id]; seen {
		return false
	}
	if d.damagedSeen == nil {
		d.damagedSeen = map[string]struct{}{}
	}
	d.damagedSeen[id] = struct{}{}
	d.damagedValues.Add(1)
	return true
}

// DamagedValues returns how many damaged values of the delivered sets and
// the sinks' held sets reads met since Open (each counted once): values
// whose checksum or layout is wrong, whose records were taken as not
// delivered (or not held by that sink): a copy, never a loss.
func (d *DB) DamagedValues() int64 { return d.damagedValues.Load() }
