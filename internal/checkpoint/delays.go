package checkpoint

import (
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/svcexport/collector/internal/cursor"
)

// The platform's delays each stream learnt (State.Delays, recheck: auto)
// live in the bucket "delays", one sub-bucket per stream (the stream's
// key) holding one JSON value under "v". They are kept apart from the
// state so that a file stays readable by a collector that predates them
// (it decodes states strictly and ignores buckets it does not know).
var (
	bucketDelays = []byte("delays")
	delaysValue  = []byte("v")
)

// putDelays stores d as the delays of the stream key; an empty d leaves
// what is stored.
func putDelays(tx *bolt.Tx, key []byte, d cursor.Delays) error {
	if d.Empty() {
		return nil
	}
	root, err := tx.CreateBucketIfNotExists(bucketDelays)
	if err != nil {
		return err
	}
	b, err := root.CreateBucketIfNotExists(key)
	if err != nil {
		return err
	}
	v, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encode delays: %w", err)
	}
	return b.Put(delaysValue, v)
}

// readDelays returns the delays stored for the stream key (the zero
// Delays when none are).
func readDelays(tx *bolt.Tx, key []byte) (cursor.Delays, error) {
	var d cursor.Delays
	root := tx.Bucket(bucketDelays)
	if root == nil {
		return d, nil
	}
	b := root.Bucket(key)
	if b == nil {
		return d, nil
	}
	v := b.Get(delaysValue)
	if v == nil {
		return d, nil
	}
	if err := json.Unmarshal(v, &d); err != nil {
		return cursor.Delays{}, fmt.Errorf("delays: %w: %w", ErrCorrupt, err)
	}
	return d, nil
}
