package checkpoint

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/svcexport/collector/internal/cursor"
)

// Layout of one stream's bucket in the alerts bucket:
//
//	'u' uuid              -> alertVersion, update ms, create ms (17 bytes)
//	'c' create ms, uuid   -> empty: the marks by creation, for pruning
//
// Milliseconds are big-endian with the sign bit flipped, so keys sort as
// times. The bucket's sequence is the number of marks.
const (
	alertVersion   = 1
	alertValueLen  = 17
	alertByUUID    = 'u'
	alertByCreated = 'c'
)

func msKey(ms int64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(ms)^(1<<63))
	return b[:]
}

func keyMs(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)) }

func uuidKey(uuid string) []byte { return append([]byte{alertByUUID}, uuid...) }

func createdKey(createMs int64, uuid string) []byte {
	k := append([]byte{alertByCreated}, msKey(createMs)...)
	return append(k, uuid...)
}

func encodeAlert(m cursor.AlertMark) []byte {
	v := make([]byte, alertValueLen)
	v[0] = alertVersion
	binary.BigEndian.PutUint64(v[1:], uint64(msOf(m.Update)))
	binary.BigEndian.PutUint64(v[9:], uint64(msOf(m.Create)))
	return v
}

// msOf is t in Unix milliseconds; the zero time is 0.
func msOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func timeOfMs(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

func decodeAlert(v []byte) (update, create int64, err error) {
	if len(v) == 0 {
		return 0, 0, fmt.Errorf("empty alert value: %w", ErrCorrupt)
	}
	if v[0] != alertVersion {
		return 0, 0, fmt.Errorf("alert value has version %d, this collector reads version %d: %w", v[0], alertVersion, ErrUnknownVersion)
	}
	if len(v) != alertValueLen {
		return 0, 0, fmt.Errorf("alert value of %d bytes, want %d: %w", len(v), alertValueLen, ErrCorrupt)
	}
	return int64(binary.BigEndian.Uint64(v[1:])), int64(binary.BigEndian.Uint64(v[9:])), nil
}

// ApplyAlerts applies c in tx to the marks of the stream whose key is key
// and returns how many marks the bound dropped.
func applyAlerts(tx *bolt.Tx, key []byte, c cursor.AlertChanges, limit int) (dropped int, err error) {
	if c.Empty() {
		return 0, nil
	}
	b, err := streamBucket(tx, bucketAlerts, key, len(c.Put) > 0)
	if b == nil || err != nil {
		return 0, err
	}
	// Keys go in in order, the index ('c') before the marks ('u'): bbolt
	// inserts into a node's sorted slice, and ten thousand inserts in the
	// middle of a new bucket's one node would move it ten thousand times.
	n := b.Sequence()
	uuids := slices.Sorted(maps.Keys(c.Put))
	index := make([][]byte, 0, len(uuids))
	for _, uuid := range uuids {
		if uuid == "" {
			return 0, fmt.Errorf("alert mark without uuid")
		}
		create := msOf(c.Put[uuid].Create)
		if old := b.Get(uuidKey(uuid)); old != nil {
			_, oldCreate, err := decodeAlert(old)
			if err != nil {
				return 0, fmt.Errorf("alert %q: %w", uuid, err)
			}
			if oldCreate == create {
				continue
			}
			if err := b.Delete(createdKey(oldCreate, uuid)); err != nil {
				return 0, err
			}
		} else {
			n++
		}
		index = append(index, createdKey(create, uuid))
	}
	slices.SortFunc(index, bytes.Compare)
	for _, ik := range index {
		if err := b.Put(ik, []byte{}); err != nil {
			return 0, err
		}
	}
	for _, uuid := range uuids {
		if err := b.Put(uuidKey(uuid), encodeAlert(c.Put[uuid])); err != nil {
			return 0, err
		}
	}
	// Forget the alerts created before the cut, then the oldest ones past
	// the bound: both from the front of the creation index.
	cut := msOf(c.PruneCreatedBefore)
	var del [][]byte
	cur := b.Cursor()
	for ck, _ := cur.Seek([]byte{alertByCreated}); ck != nil && ck[0] == alertByCreated; ck, _ = cur.Next() {
		if len(ck) < 9 {
			return 0, fmt.Errorf("alert index key %x: %w", ck, ErrCorrupt)
		}
		pruned := !c.PruneCreatedBefore.IsZero() && keyMs(ck[1:9]) < cut
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
		if err := b.Delete(uuidKey(string(ck[9:]))); err != nil {
			return 0, err
		}
	}
	n -= uint64(len(del))
	if n == 0 {
		return dropped, tx.Bucket(bucketAlerts).DeleteBucket(key)
	}
	return dropped, b.SetSequence(n)
}

// ReadAlerts returns from tx the marks of the stream whose key is key.
func readAlerts(tx *bolt.Tx, key []byte) (map[string]cursor.AlertMark, error) {
	out := map[string]cursor.AlertMark{}
	root := tx.Bucket(bucketAlerts)
	if root == nil {
		return out, nil // a file of a version before the alert marks
	}
	b := root.Bucket(key)
	if b == nil {
		return out, nil
	}
	out = make(map[string]cursor.AlertMark, b.Sequence())
	var indexed uint64
	cur := b.Cursor()
	for ck, v := cur.First(); ck != nil; ck, v = cur.Next() {
		switch {
		case v == nil && b.Bucket(ck) != nil:
			return nil, fmt.Errorf("unexpected bucket %q among the alert marks: %w", ck, ErrCorrupt)
		case ck[0] == alertByCreated:
			indexed++
		case ck[0] == alertByUUID && len(ck) > 1:
			u, c, err := decodeAlert(v)
			if err != nil {
				return nil, fmt.Errorf("alert %q: %w", ck[1:], err)
			}
			out[string(ck[1:])] = cursor.AlertMark{Update: timeOfMs(u), Create: timeOfMs(c)}
		default:
			return nil, fmt.Errorf("unexpected key %x among the alert marks: %w", ck, ErrCorrupt)
		}
	}
	if uint64(len(out)) != b.Sequence() || indexed != b.Sequence() {
		return nil, fmt.Errorf("alert marks hold %d alerts and %d index keys, their count says %d: %w", len(out), indexed, b.Sequence(), ErrCorrupt)
	}
	return out, nil
}
