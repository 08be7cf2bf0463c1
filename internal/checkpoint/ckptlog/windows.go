package ckptlog

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/svcexport/collector/internal/checkpoint/boltfile"
)

// Window is one entry of a stream's window log: a window whose every page
// was acknowledged, with what it held when it was fetched, so that it can
// be asked again later for records that arrived late (CONTRACT C3: a
// record may become visible hours after its time).
//
// Its fields are those of recheck.Window, in the same order, so that the
// two convert into each other with a type conversion
// (recheck.Window(w)); the checkpoint stores it and knows nothing of
// rechecks.
type Window struct {
	// Start and End bound the half-open window [Start, End) (C3). Start
	// is the entry's key: a stream has one entry per start.
	Start, End time.Time
	// Count is the size of the window's result set when it was fetched:
	// the first page's totalRows for a core window (C3), the rows
	// delivered for an edge window (C6, no totalRows).
	Count int64
	// Digest is the hex XOR of the C7 ids delivered for an edge window
	// (record.Digest.Hex); "" for a core window.
	Digest string
	// FetchedAt is when the window's first page arrived.
	FetchedAt time.Time
	// Stage counts the recheck points done (0: none yet).
	Stage int
}

// WindowChanges are the changes to one stream's window log in one Apply:
// first Delete, then Put, then PruneBefore, then the store's bound on
// entries (WithWindowLimit). The zero value changes nothing.
type WindowChanges struct {
	// Delete removes the entries with these starts (a missing one is no
	// error): the entries a merged entry of Put replaces.
	Delete []time.Time
	// Put inserts each entry, or replaces the entry with the same Start.
	Put []Window
	// PruneBefore, when not zero, removes every entry whose End is at or
	// before it: the log is bounded to a horizon.
	PruneBefore time.Time
}

// Merge folds later, a change that comes after c, into c, so that
// applying c once has the effect of applying both in order; only a
// PruneBefore is taken as the later of the two and applies to every entry,
// which differs only for an entry put by later that ends before c's
// prune: no such entry is worth keeping. The pipeline merges the changes of
// the pages it commits together.
func (c *WindowChanges) Merge(later WindowChanges) {
	for _, d := range later.Delete {
		c.Put = slices.DeleteFunc(c.Put, func(w Window) bool { return w.Start.Equal(d) })
		c.Delete = append(c.Delete, d)
	}
	for _, w := range later.Put {
		c.Put = slices.DeleteFunc(c.Put, func(p Window) bool { return p.Start.Equal(w.Start) })
		c.Put = append(c.Put, w)
	}
	if later.PruneBefore.After(c.PruneBefore) {
		c.PruneBefore = later.PruneBefore
	}
}

// Empty reports whether c changes nothing.
func (c WindowChanges) Empty() bool {
	return len(c.Delete) == 0 && len(c.Put) == 0 && c.PruneBefore.IsZero()
}

// windowVersion is the version of the encoding of a Window value.
const windowVersion = 1

// wireWindow is the stored form of a Window, separate from Window so that
// a change of the type never silently changes the file format.
type wireWindow struct {
	V         int       `json:"v"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Count     int64     `json:"count"`
	Digest    string    `json:"digest,omitempty"`
	FetchedAt time.Time `json:"fetched_at"`
	Stage     int       `json:"stage"`
}

// minKeyTime and maxKeyTime bound the times a key can hold: nanoseconds
// since 1970 in an int64.
var (
	minKeyTime = time.Unix(0, math.MinInt64).UTC()
	maxKeyTime = time.Unix(0, math.MaxInt64).UTC()
)

// timeKey is t as 8 bytes that sort as the times do: Unix nanoseconds
// with the sign bit flipped, big-endian.
func timeKey(t time.Time) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(t.UnixNano())^(1<<63))
	return b[:]
}

func keyTime(b []byte) time.Time {
	return time.Unix(0, int64(binary.BigEndian.Uint64(b)^(1<<63))).UTC()
}

// ValidWindow returns an error when w cannot be stored: a zero or empty
// window, one outside the times a key can hold, a negative count or stage.
func ValidWindow(w Window) error {
	switch {
	case w.Start.IsZero() || w.End.IsZero():
		return fmt.Errorf("window [%v, %v): a bound is zero", w.Start, w.End)
	case !w.End.After(w.Start):
		return fmt.Errorf("window [%v, %v) is empty", w.Start, w.End)
	case w.Start.Before(minKeyTime) || w.End.After(maxKeyTime):
		return fmt.Errorf("window [%v, %v) is outside the years 1678-2262", w.Start, w.End)
	case w.Count < 0 || w.Stage < 0:
		return fmt.Errorf("window [%v, %v): negative count %d or stage %d", w.Start, w.End, w.Count, w.Stage)
	}
	return nil
}

func encodeWindow(w Window) ([]byte, error) {
	b, err := json.Marshal(wireWindow{
		V: windowVersion, Start: utc(w.Start), End: utc(w.End), Count: w.Count,
		Digest: w.Digest, FetchedAt: utc(w.FetchedAt), Stage: w.Stage,
	})
	if err != nil {
		return nil, fmt.Errorf("encode window: %w", err)
	}
	return b, nil
}

// decodeWindow decodes the value stored under key; a value it cannot read
// is an error wrapping boltfile.ErrCorrupt or boltfile.ErrUnknownVersion.
func decodeWindow(key, b []byte) (Window, error) {
	if len(key) != 8 {
		return Window{}, fmt.Errorf("window key %x is not 8 bytes: %w", key, boltfile.ErrCorrupt)
	}
	if err := checkVersion(b, windowVersion); err != nil {
		return Window{}, fmt.Errorf("window %s: %w", keyTime(key).Format(time.RFC3339Nano), err)
	}
	var w wireWindow
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil || dec.More() {
		return Window{}, fmt.Errorf("window %s: undecodable value: %w", keyTime(key).Format(time.RFC3339Nano), boltfile.ErrCorrupt)
	}
	out := Window{Start: utc(w.Start), End: utc(w.End), Count: w.Count, Digest: w.Digest, FetchedAt: utc(w.FetchedAt), Stage: w.Stage}
	if !out.Start.Equal(keyTime(key)) || ValidWindow(out) != nil {
		return Window{}, fmt.Errorf("window %s: value [%v, %v) count %d stage %d does not fit its key: %w",
			keyTime(key).Format(time.RFC3339Nano), out.Start, out.End, out.Count, out.Stage, boltfile.ErrCorrupt)
	}
	return out, nil
}

// checkVersion reads the "v" member of a JSON value and refuses any other
// than want.
func checkVersion(b []byte, want int) error {
	var head struct {
		V *int `json:"v"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return fmt.Errorf("undecodable value (%d bytes): %w: %w", len(b), boltfile.ErrCorrupt, err)
	}
	if head.V == nil {
		return fmt.Errorf("value has no version field: %w", boltfile.ErrCorrupt)
	}
	if *head.V != want {
		return fmt.Errorf("value has version %d, this collector reads version %d: %w", *head.V, want, boltfile.ErrUnknownVersion)
	}
	return nil
}

// ApplyWindows applies c in tx to the log of the stream whose key is key
// (the caller's encoding of the stream). The stream's bucket holds one
// key per entry (timeKey of its start); its sequence is the number of
// entries, kept so that the bound needs no count of the keys. It returns
// how many entries the bound dropped.
func ApplyWindows(tx *bolt.Tx, key []byte, c WindowChanges, limit int) (dropped int, err error) {
	if c.Empty() {
		return 0, nil
	}
	b, err := streamBucket(tx, bucketWindows, key, len(c.Put) > 0)
	if b == nil || err != nil {
		return 0, err
	}
	n := b.Sequence()
	for _, s := range c.Delete {
		if s.Before(minKeyTime) || s.After(maxKeyTime) {
			continue
		}
		if tk := timeKey(s); b.Get(tk) != nil {
			if err := b.Delete(tk); err != nil {
				return 0, err
			}
			n--
		}
	}
	for _, w := range c.Put {
		v, err := encodeWindow(w)
		if err != nil {
			return 0, err
		}
		tk := timeKey(w.Start)
		if b.Get(tk) == nil {
			n++
		}
		if err := b.Put(tk, v); err != nil {
			return 0, err
		}
	}
	// Entries are sorted by start and do not overlap, so those ending at
	// or before the cut are at the front; and past the bound the oldest
	// go first.
	var del [][]byte
	cur := b.Cursor()
	for ck, v := cur.First(); ck != nil; ck, v = cur.Next() {
		pruned := false
		if !c.PruneBefore.IsZero() {
			w, err := decodeWindow(ck, v)
			if err != nil {
				return 0, err
			}
			pruned = !w.End.After(c.PruneBefore)
		}
		over := limit > 0 && n-uint64(len(del)) > uint64(limit)
		if !pruned && !over {
			break
		}
		if !pruned {
			dropped++
		}
		del = append(del, bytes.Clone(ck))
	}
	for _, ck := range del {
		if err := b.Delete(ck); err != nil {
			return 0, err
		}
	}
	n -= uint64(len(del))
	if n == 0 {
		return dropped, tx.Bucket(bucketWindows).DeleteBucket(key)
	}
	return dropped, b.SetSequence(n)
}

// ReadWindows returns from tx the log of the stream whose key is key,
// sorted by start.
func ReadWindows(tx *bolt.Tx, key []byte) ([]Window, error) {
	root := tx.Bucket(bucketWindows)
	if root == nil {
		return nil, nil // a file of a version before the window log
	}
	b := root.Bucket(key)
	if b == nil {
		return nil, nil
	}
	out := make([]Window, 0, b.Sequence())
	err := b.ForEach(func(key, v []byte) error {
		if v == nil {
			return fmt.Errorf("unexpected bucket %q in the window log: %w", key, boltfile.ErrCorrupt)
		}
		w, err := decodeWindow(key, v)
		if err != nil {
			return err
		}
		out = append(out, w)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if uint64(len(out)) != b.Sequence() {
		return nil, fmt.Errorf("window log holds %d entries, its count says %d: %w", len(out), b.Sequence(), boltfile.ErrCorrupt)
	}
	return out, nil
}

// streamBucket returns the bucket of the stream whose key is key under
// the root bucket root, created when create is set; nil (and no error)
// when it does not exist and create is not set.
func streamBucket(tx *bolt.Tx, root, key []byte, create bool) (*bolt.Bucket, error) {
	r := tx.Bucket(root)
	if r == nil {
		return nil, fmt.Errorf("no %s bucket: %w", root, boltfile.ErrCorrupt)
	}
	if b := r.Bucket(key); b != nil || !create {
		return b, nil
	}
	return r.CreateBucket(key)
}
