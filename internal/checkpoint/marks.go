package checkpoint

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// bucketMarks holds the sinks' marks (sink.Ledger): one value per sink
// name, opaque here, committed in the same transaction as the states they
// agree with. A file without the bucket (older collectors) has no marks;
// an older collector ignores it.
var bucketMarks = []byte("sinks")

// Marks returns every sink's mark as last committed, by sink name; empty
// when none was.
func (d *DB) Marks(ctx context.Context) (map[string][]byte, error) {
	if err := d.usable(ctx); err != nil {
		return nil, fmt.Errorf("load the sinks' marks: %w", err)
	}
	out := map[string][]byte{}
	err := d.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketMarks)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			if bytes.HasSuffix(k, []byte(legacyHeldSuffix)) {
				return nil // a held set of an earlier collector (Held)
			}
			out[string(k)] = bytes.Clone(v)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoint file %s: the sinks' marks: %w", d.path, err)
	}
	return out, nil
}

func applyMarks(tx *bolt.Tx, marks map[string][]byte) error {
	if len(marks) == 0 {
		return nil
	}
	b, err := tx.CreateBucketIfNotExists(bucketMarks)
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(marks)) {
		if name == "" {
			return fmt.Errorf("a sink mark without a sink name")
		}
		if err := b.Put([]byte(name), marks[name]); err != nil {
			return err
		}
	}
	return nil
}
