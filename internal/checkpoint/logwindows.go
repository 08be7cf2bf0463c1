package checkpoint

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/svcexport/collector/internal/cursor"
)

// windowVersion is the version of the encoding of a cursor.LoggedWindow
// value. Version 3 stores when the window is next due ("due",
// cursor.LoggedWindow.Due, absent when none), so that a schedule learnt
// anew after a restart never moves a point later. Version 2 stored how
// long after its end the window was last asked ("passed_ns",
// cursor.LoggedWindow.Passed), which version 3 keeps; a version 2 value
// reads with no due time, and the poller that loads it gives it one from
// Passed (recheck.Plan.Load). Version 1 stored "stage", an index into the
// recheck points of the time, which a learnt schedule recomputed at every
// step could make skip points. Versions 1 and 2 are still read (windowV1,
// wireWindowV2) and written back as version 3.
const (
	windowVersion   = 3
	windowVersionV2 = 2
	windowVersionV1 = 1
)

// wireWindow is the stored form of a cursor.LoggedWindow, separate from cursor.LoggedWindow so that
// a change of the type never silently changes the file format.
type wireWindow struct {
	V         int       `json:"v"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Count     int64     `json:"count"`
	Digest    string    `json:"digest,omitempty"`
	FetchedAt time.Time `json:"fetched_at"`
	// PassedNs is cursor.LoggedWindow.Passed in nanoseconds.
	PassedNs int64 `json:"passed_ns"`
	// Due is cursor.LoggedWindow.Due, absent when zero.
	Due time.Time `json:"due,omitzero"`
}

// wireWindowV2 is the stored form of version 2: version 3 without due.
type wireWindowV2 struct {
	V         int       `json:"v"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Count     int64     `json:"count"`
	Digest    string    `json:"digest,omitempty"`
	FetchedAt time.Time `json:"fetched_at"`
	PassedNs  int64     `json:"passed_ns"`
}

// wireWindowV1 is the stored form of version 1.
type wireWindowV1 struct {
	V         int       `json:"v"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Count     int64     `json:"count"`
	Digest    string    `json:"digest,omitempty"`
	FetchedAt time.Time `json:"fetched_at"`
	Stage     int       `json:"stage"`
}

// windowV1 converts a version 1 value. Its stage counted the points
// passed of the schedule of the time it was written, which nothing here
// knows (a learnt schedule changed at every step, and the schedule now is
// the one that would skip points), so the conversion keeps only what
// holds under every schedule: the window was asked when it was fetched
// (FetchedAt, its first fetch or its last refetch), and perhaps later.
// Passed is FetchedAt minus End: every point still to come is still to
// come; a point passed after FetchedAt without a refetch comes once more
// (one recheck more, never one fewer).
func windowV1(w wireWindowV1) (cursor.LoggedWindow, error) {
	if w.Stage < 0 {
		return cursor.LoggedWindow{}, fmt.Errorf("negative stage %d", w.Stage)
	}
	out := cursor.LoggedWindow{Start: utc(w.Start), End: utc(w.End), Count: w.Count, Digest: w.Digest, FetchedAt: utc(w.FetchedAt)}
	if !w.FetchedAt.IsZero() {
		out.Passed = max(w.FetchedAt.Sub(w.End), 0)
	}
	return out, nil
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

// validWindow returns an error when w cannot be stored: a zero or empty
// window, one outside the times a key can hold, a negative count or
// passed.
func validWindow(w cursor.LoggedWindow) error {
	switch {
	case w.Start.IsZero() || w.End.IsZero():
		return fmt.Errorf("window [%v, %v): a bound is zero", w.Start, w.End)
	case !w.End.After(w.Start):
		return fmt.Errorf("window [%v, %v) is empty", w.Start, w.End)
	case w.Start.Before(minKeyTime) || w.End.After(maxKeyTime):
		return fmt.Errorf("window [%v, %v) is outside the years 1678-2262", w.Start, w.End)
	case w.Count < 0 || w.Passed < 0:
		return fmt.Errorf("window [%v, %v): negative count %d or passed %v", w.Start, w.End, w.Count, w.Passed)
	case !w.Due.IsZero() && (!w.Due.After(w.End) || w.Due.After(maxKeyTime)):
		return fmt.Errorf("window [%v, %v): due at %v, not after its end or past 2262", w.Start, w.End, w.Due)
	}
	return nil
}

func encodeWindow(w cursor.LoggedWindow) ([]byte, error) {
	b, err := json.Marshal(wireWindow{
		V: windowVersion, Start: utc(w.Start), End: utc(w.End), Count: w.Count,
		Digest: w.Digest, FetchedAt: utc(w.FetchedAt), PassedNs: int64(w.Passed), Due: utc(w.Due),
	})
	if err != nil {
		return nil, fmt.Errorf("encode window: %w", err)
	}
	return b, nil
}

// decodeWindow decodes the value stored under key; a value it cannot read
// is an error wrapping ErrCorrupt or ErrUnknownVersion.
func decodeWindow(key, b []byte) (cursor.LoggedWindow, error) {
	if len(key) != 8 {
		return cursor.LoggedWindow{}, fmt.Errorf("window key %x is not 8 bytes: %w", key, ErrCorrupt)
	}
	v, err := readVersion(b)
	if err == nil && v != windowVersion && v != windowVersionV2 && v != windowVersionV1 {
		err = fmt.Errorf("value has version %d, this collector reads versions %d to %d: %w", v, windowVersionV1, windowVersion, ErrUnknownVersion)
	}
	if err != nil {
		return cursor.LoggedWindow{}, fmt.Errorf("window %s: %w", keyTime(key).Format(time.RFC3339Nano), err)
	}
	var out cursor.LoggedWindow
	switch v {
	case windowVersionV1:
		var w wireWindowV1
		if err = decodeStrict(b, &w); err == nil {
			out, err = windowV1(w)
		}
	case windowVersionV2:
		var w wireWindowV2
		if err = decodeStrict(b, &w); err == nil {
			out = cursor.LoggedWindow{Start: utc(w.Start), End: utc(w.End), Count: w.Count, Digest: w.Digest, FetchedAt: utc(w.FetchedAt),
				Passed: time.Duration(w.PassedNs)}
		}
	default:
		var w wireWindow
		if err = decodeStrict(b, &w); err == nil {
			out = cursor.LoggedWindow{Start: utc(w.Start), End: utc(w.End), Count: w.Count, Digest: w.Digest, FetchedAt: utc(w.FetchedAt),
				Passed: time.Duration(w.PassedNs), Due: utc(w.Due)}
		}
	}
	if err != nil {
		return cursor.LoggedWindow{}, fmt.Errorf("window %s: undecodable value: %w", keyTime(key).Format(time.RFC3339Nano), ErrCorrupt)
	}
	if !out.Start.Equal(keyTime(key)) || validWindow(out) != nil {
		return cursor.LoggedWindow{}, fmt.Errorf("window %s: value [%v, %v) count %d passed %v does not fit its key: %w",
			keyTime(key).Format(time.RFC3339Nano), out.Start, out.End, out.Count, out.Passed, ErrCorrupt)
	}
	return out, nil
}

// decodeStrict decodes the JSON value b into v, refusing unknown members
// and trailing values.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}

// readVersion reads the "v" member of a JSON value.
func readVersion(b []byte) (int, error) {
	var head struct {
		V *int `json:"v"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return 0, fmt.Errorf("undecodable value (%d bytes): %w: %w", len(b), ErrCorrupt, err)
	}
	if head.V == nil {
		return 0, fmt.Errorf("value has no version field: %w", ErrCorrupt)
	}
	return *head.V, nil
}

// ApplyWindows applies c in tx to the log of the stream whose key is key
// (the caller's encoding of the stream). The stream's bucket holds one
// key per entry (timeKey of its start); its sequence is the number of
// entries, kept so that the bound needs no count of the keys. It returns
// how many entries the bound dropped.
func applyWindows(tx *bolt.Tx, key []byte, c cursor.WindowChanges, limit int) (dropped int, err error) {
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
func readWindows(tx *bolt.Tx, key []byte) ([]cursor.LoggedWindow, error) {
	root := tx.Bucket(bucketWindows)
	if root == nil {
		return nil, nil // a file of a version before the window log
	}
	b := root.Bucket(key)
	if b == nil {
		return nil, nil
	}
	out := make([]cursor.LoggedWindow, 0, b.Sequence())
	err := b.ForEach(func(key, v []byte) error {
		if v == nil {
			return fmt.Errorf("unexpected bucket %q in the window log: %w", key, ErrCorrupt)
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
		return nil, fmt.Errorf("window log holds %d entries, its count says %d: %w", len(out), b.Sequence(), ErrCorrupt)
	}
	return out, nil
}

// streamBucket returns the bucket of the stream whose key is key under
// the root bucket root, created when create is set; nil (and no error)
// when it does not exist and create is not set.
func streamBucket(tx *bolt.Tx, root, key []byte, create bool) (*bolt.Bucket, error) {
	r := tx.Bucket(root)
	if r == nil {
		return nil, fmt.Errorf("no %s bucket: %w", root, ErrCorrupt)
	}
	if b := r.Bucket(key); b != nil || !create {
		return b, nil
	}
	return r.CreateBucket(key)
}
