package checkpoint

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// The delivered sets: what each stream delivered within the period it may
// ask again (cursor.Delivered), so that a recheck, a restarted chain or a
// resume delivers only what is new. They live in the bucket "delivered",
// one sub-bucket per stream (the stream's key), one value per commit and
// minute of record time: the key is the minute's start in Unix
// milliseconds (8 bytes, big-endian, so keys sort by time) and a sequence
// number of the sub-bucket (8 bytes: a commit appends, it never rewrites
// what an earlier one stored), the value a version byte and then 10 bytes
// per record, sorted: its millisecond within the minute (2 bytes) and its
// id hash (8 bytes). A file without the bucket (older collectors)
// has empty sets; an older collector ignores the bucket.
var bucketDelivered = []byte("delivered")

const (
	deliveredVersion = 1
	deliveredEntry   = 10
	minuteMillis     = int64(time.Minute / time.Millisecond)
)

// DeliveredBytesPerRecord is what the checkpoint file keeps per record of a
// delivered set, besides bbolt's own overhead (a few bytes per minute of
// record time).
const DeliveredBytesPerRecord = deliveredEntry

func minuteKey(ms int64) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(ms-floorMod(ms, minuteMillis)))
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

func decodeMinute(start int64, v []byte) ([]cursor.Delivered, error) {
	if len(v) == 0 || v[0] != deliveredVersion || (len(v)-1)%deliveredEntry != 0 {
		return nil, fmt.Errorf("delivered set of minute %d: %w", start, ErrCorrupt)
	}
	out := make([]cursor.Delivered, 0, (len(v)-1)/deliveredEntry)
	for p := v[1:]; len(p) > 0; p = p[deliveredEntry:] {
		out = append(out, cursor.Delivered{
			Time: start + int64(binary.BigEndian.Uint16(p)),
			Hash: binary.BigEndian.Uint64(p[2:]),
		})
	}
	return out, nil
}

func encodeMinute(start int64, es []cursor.Delivered) []byte {
	v := make([]byte, 1, 1+len(es)*deliveredEntry)
	v[0] = deliveredVersion
	for _, e := range es {
		v = binary.BigEndian.AppendUint16(v, uint16(e.Time-start))
		v = binary.BigEndian.AppendUint64(v, e.Hash)
	}
	return v
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
	adds = slices.SortedFunc(slices.Values(adds), compareDelivered)
	for len(adds) > 0 {
		start := adds[0].Time - floorMod(adds[0].Time, minuteMillis)
		n := 1
		for n < len(adds) && adds[n].Time < start+minuteMillis {
			n++
		}
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		k := binary.BigEndian.AppendUint64(minuteKey(start), seq)
		if err := b.Put(k, encodeMinute(start, adds[:n])); err != nil {
			return err
		}
		adds = adds[n:]
	}
	return nil
}

// pruneDelivered forgets the minutes of the stream key that end at or
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
	end := minuteKey(cutoff.UnixMilli() - minuteMillis + 1) // the last minute that ends at or before cutoff
	var del [][]byte
	c := b.Cursor()
	for k, _ := c.First(); k != nil && bytes.Compare(k[:8], end) <= 0; k, _ = c.Next() {
		if int64(binary.BigEndian.Uint64(k[:8]))+minuteMillis <= cutoff.UnixMilli() {
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

// DeliveredIn returns the delivered set of k for record times in [from,
// to), as committed: what asking that period again must not deliver twice.
func (d *DB) DeliveredIn(ctx context.Context, k record.Stream, from, to time.Time) ([]cursor.Delivered, error) {
	if err := d.usable(ctx); err != nil {
		return nil, fmt.Errorf("load delivered set of %s: %w", k, err)
	}
	if err := validateKey(k); err != nil {
		return nil, fmt.Errorf("load delivered set: %w", err)
	}
	var out []cursor.Delivered
	lo, hi := from.UnixMilli(), to.UnixMilli()
	err := d.eachMinute(k, lo, hi, func(start int64, v []byte) error {
		es, err := decodeMinute(start, v)
		if err != nil {
			return err
		}
		for _, e := range es {
			if e.Time >= lo && e.Time < hi {
				out = append(out, e)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoint file %s: delivered set of %s: %w", d.path, k, err)
	}
	return out, nil
}

// eachMinute calls fn with every stored value of the delivered set of k
// whose minute starts before hi and ends after lo (Unix milliseconds), in
// the order of their keys, within one read transaction.
func (d *DB) eachMinute(k record.Stream, lo, hi int64, fn func(start int64, v []byte) error) error {
	return d.view(func(tx *bolt.Tx) error {
		root := tx.Bucket(bucketDelivered)
		if root == nil {
			return nil
		}
		b := root.Bucket(encodeKey(k))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for key, v := c.Seek(minuteKey(lo)); key != nil; key, v = c.Next() {
			start := int64(binary.BigEndian.Uint64(key[:8]))
			if start >= hi {
				break
			}
			if err := fn(start, v); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeliveredEnd returns the end of the minute of the latest record time in
// the delivered set of k (zero when the set is empty): no record at or
// after it was delivered, as committed.
func (d *DB) DeliveredEnd(ctx context.Context, k record.Stream) (time.Time, error) {
	if err := d.usable(ctx); err != nil {
		return time.Time{}, fmt.Errorf("load delivered set of %s: %w", k, err)
	}
	if err := validateKey(k); err != nil {
		return time.Time{}, fmt.Errorf("load delivered set: %w", err)
	}
	var end time.Time
	err := d.view(func(tx *bolt.Tx) error {
		root := tx.Bucket(bucketDelivered)
		if root == nil {
			return nil
		}
		b := root.Bucket(encodeKey(k))
		if b == nil {
			return nil
		}
		if key, _ := b.Cursor().Last(); len(key) >= 8 {
			end = time.UnixMilli(int64(binary.BigEndian.Uint64(key[:8])) + minuteMillis)
		}
		return nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("checkpoint file %s: delivered set of %s: %w", d.path, k, err)
	}
	return end, nil
}

// DeliveredCounts returns how many records of the delivered set of k lie
// in each minute of record time that [from, to) touches, cut to [from,
// to): counts[i] is the count in [max(from, m+i min), min(to, m+(i+1)
// min)), m the start of from's minute. A recheck compares them with the
// server's counts of the same periods to find where a window grew (the
// counts of the delivered set, as committed, never exceed what was
// delivered).
func (d *DB) DeliveredCounts(ctx context.Context, k record.Stream, from, to time.Time) ([]int64, error) {
	if err := d.usable(ctx); err != nil {
		return nil, fmt.Errorf("load delivered set of %s: %w", k, err)
	}
	if err := validateKey(k); err != nil {
		return nil, fmt.Errorf("load delivered set: %w", err)
	}
	lo, hi := from.UnixMilli(), to.UnixMilli()
	if hi <= lo {
		return nil, nil
	}
	first := lo - floorMod(lo, minuteMillis)
	counts := make([]int64, (hi-first+minuteMillis-1)/minuteMillis)
	err := d.eachMinute(k, lo, hi, func(start int64, v []byte) error {
		i := (start - first) / minuteMillis
		if start >= lo && start+minuteMillis <= hi {
			// A whole minute inside: its length says its count.
			if len(v) == 0 || v[0] != deliveredVersion || (len(v)-1)%deliveredEntry != 0 {
				return fmt.Errorf("delivered set of minute %d: %w", start, ErrCorrupt)
			}
			counts[i] += int64((len(v) - 1) / deliveredEntry)
			return nil
		}
		es, err := decodeMinute(start, v)
		if err != nil {
			return err
		}
		for _, e := range es {
			if e.Time >= lo && e.Time < hi {
				counts[i]++
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoint file %s: delivered set of %s: %w", d.path, k, err)
	}
	return counts, nil
}
