package checkpoint

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// The sinks' held sets: what a sink holds beyond the checkpoint, that a
// sink's crash recovery found (sink.Ledger.Recover, sink.Held), so that
// the pipeline writes those records to it no more (CONTRACT C7: each
// record once in each sink) also after a crash of the run that recovered.
// They are the delivered sets' form and code: the bucket "held", one
// sub-bucket per sink name, in it one per stream (the stream's key), whose
// values are those of a delivered set (delivered.go: version 3, hour
// spans, CRC-32C), written by the same putSpans, cut by the same
// pruneSpans in the same transaction as the stream's delivered set, at
// the same cutoff, except for a stream that tracks alerts (heldCutoff).
// An entry the cut leaves may be redundant (its record was committed
// since, and the delivered set or the alert marks keep it from the sinks),
// never wrong: the sink does hold the record. A damaged value counts as
// not held (a copy, never a loss).
//
// A file of collectors before the held sets keeps a sink's held set as a
// JSON value in the marks bucket, under the sink's name and "\x00skip"
// (ids only, no record time): Held reads it, and the first commit after
// Open converts it to the held sets and removes it. Its entries, whose
// record time is unknown, are put at the hour of the conversion, which
// every cutoff before it leaves alone (the pipeline matches held entries
// by their id hash).
var bucketHeld = []byte("held")

// legacyHeldSuffix ends the key of a sink's held set among the marks in
// files of earlier collectors.
const legacyHeldSuffix = "\x00skip"

// Held returns every sink's held set by sink name, as committed (the
// entries of a legacy value included, see above).
func (d *DB) Held(ctx context.Context) (map[string]map[record.Stream][]cursor.Delivered, error) {
	if err := d.usable(ctx); err != nil {
		return nil, fmt.Errorf("load the sinks' held sets: %w", err)
	}
	out := map[string]map[record.Stream][]cursor.Delivered{}
	add := func(name string, k record.Stream, es ...cursor.Delivered) {
		if out[name] == nil {
			out[name] = map[record.Stream][]cursor.Delivered{}
		}
		out[name][k] = append(out[name][k], es...)
	}
	now := d.now()
	err := d.view(func(tx *bolt.Tx) error {
		legacy, err := readLegacyHeld(tx, now)
		if err != nil {
			return err
		}
		for name, ks := range legacy {
			for k, es := range ks {
				add(name, k, es...)
			}
		}
		root := tx.Bucket(bucketHeld)
		if root == nil {
			return nil
		}
		return root.ForEachBucket(func(name []byte) error {
			sb := root.Bucket(name)
			return sb.ForEachBucket(func(key []byte) error {
				k, err := decodeKey(key)
				if err != nil {
					return fmt.Errorf("held set of sink %q: %w", name, err)
				}
				return sb.Bucket(key).ForEach(func(vk, v []byte) error {
					if len(vk) < 8 {
						d.damagedHeld(string(name), k, vk, fmt.Errorf("a key of %d bytes: %w", len(vk), errDamagedSpan))
						return nil
					}
					s, err := parseSpan(int64(binary.BigEndian.Uint64(vk[:8])), v)
					if err != nil {
						d.damagedHeld(string(name), k, vk, err)
						return nil
					}
					for i := range s.len() {
						add(string(name), k, s.at(i))
					}
					return nil
				})
			})
		})
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoint file %s: the sinks' held sets: %w", d.path, err)
	}
	return out, nil
}

// damagedHeld reports a damaged value of the held set of sink name for
// stream k, stored under key: its records count as not held. It is logged
// and counted once, with the delivered sets' (DamagedValues).
func (d *DB) damagedHeld(name string, k record.Stream, key []byte, err error) {
	if !d.firstDamage("held\x00" + name + "\x00" + string(encodeKey(k)) + string(key)) {
		return
	}
	if d.log != nil {
		d.log.Warn("checkpoint: a value of a sink's held set is damaged (checksum); its records count as not held, and the sink may get them again (a copy, never a loss)",
			"path", d.path, "sink", name, "source", k.Source, "account", k.Account, "err", err)
	}
}

// applyHeld adds the held sets of c (by sink name, then stream) and
// converts the legacy ones (see above) in tx.
func applyHeld(tx *bolt.Tx, held map[string]map[record.Stream][]cursor.Delivered, now time.Time) error {
	legacy, err := readLegacyHeld(tx, now)
	if err != nil {
		return err
	}
	if len(legacy) > 0 {
		marks := tx.Bucket(bucketMarks)
		for name := range legacy {
			if err := marks.Delete([]byte(name + legacyHeldSuffix)); err != nil {
				return err
			}
		}
		if err := putHeld(tx, legacy); err != nil {
			return err
		}
	}
	return putHeld(tx, held)
}

func putHeld(tx *bolt.Tx, held map[string]map[record.Stream][]cursor.Delivered) error {
	for _, name := range slices.Sorted(maps.Keys(held)) {
		if name == "" {
			return fmt.Errorf("a held set without a sink name")
		}
		ks := held[name]
		for _, k := range slices.SortedFunc(maps.Keys(ks), compareStreams) {
			if len(ks[k]) == 0 {
				continue
			}
			root, err := tx.CreateBucketIfNotExists(bucketHeld)
			if err != nil {
				return err
			}
			sb, err := root.CreateBucketIfNotExists([]byte(name))
			if err != nil {
				return err
			}
			b, err := sb.CreateBucketIfNotExists(encodeKey(k))
			if err != nil {
				return err
			}
			if err := putSpans(b, ks[k]); err != nil {
				return fmt.Errorf("held set of sink %s, %s: %w", name, k, err)
			}
		}
	}
	return nil
}

// heldCutoff is where the held sets of the stream key are cut in a commit
// whose delivered set is cut at cutoff and whose alert changes of the
// stream are a: at cutoff, but no later than a.PruneCreatedBefore for a
// stream that tracks alerts (a has a prune, or the stream has alert marks),
// and not at all by a commit of such a stream without a prune.
//
// Edge alerts are asked again for updates by creation time (C6) back to
// where their marks are pruned, far before the delivered cutoff (the
// watermark, the oldest logged window): a 24 h lookback reaches alerts
// created before the stream's start, and a re-asked alert is emitted again
// unless its mark says it did not change. Once the page that emitted it
// is committed, its mark keeps it from every sink; a record a dead run
// stored past the checkpoint has no mark, and only the held set keeps it
// from the sink. Cut at the delivered cutoff, any commit of the stream
// after the recovery (an empty window's page will do) dropped those
// entries while no page of their records was committed, and the next run's
// re-ask wrote them to the sink again (C7).
func heldCutoff(tx *bolt.Tx, key []byte, cutoff time.Time, a cursor.AlertChanges) time.Time {
	if prune := a.PruneCreatedBefore; !prune.IsZero() {
		if prune.Before(cutoff) {
			return prune
		}
		return cutoff
	}
	if root := tx.Bucket(bucketAlerts); root != nil && root.Bucket(key) != nil {
		return time.Time{} // tracks alerts: cut by a commit that prunes them
	}
	return cutoff
}

// pruneHeld cuts the held sets of the stream key of every sink at cutoff,
// as its delivered set is cut, and removes the sets it empties.
func pruneHeld(tx *bolt.Tx, key []byte, cutoff time.Time) error {
	root := tx.Bucket(bucketHeld)
	if root == nil || cutoff.IsZero() {
		return nil
	}
	var emptied [][]byte
	err := root.ForEachBucket(func(name []byte) error {
		sb := root.Bucket(name)
		b := sb.Bucket(key)
		if b == nil {
			return nil
		}
		if err := pruneSpans(b, cutoff); err != nil {
			return err
		}
		if k, _ := b.Cursor().First(); k == nil {
			if err := sb.DeleteBucket(key); err != nil {
				return err
			}
		}
		if k, _ := sb.Cursor().First(); k == nil {
			emptied = append(emptied, bytes.Clone(name))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, name := range emptied {
		if err := root.DeleteBucket(name); err != nil {
			return err
		}
	}
	return nil
}

// resetHeld removes the held sets of one account of source, or of every
// account of source when account is "", of every sink.
func resetHeld(tx *bolt.Tx, k record.Stream) error {
	root := tx.Bucket(bucketHeld)
	if root == nil {
		return nil
	}
	return root.ForEachBucket(func(name []byte) error {
		return resetStreams(root.Bucket(name), k)
	})
}

// legacyHeld is one stream's entry of a legacy held set (JSON).
type legacyHeld struct {
	Source  string   `json:"s"`
	Account string   `json:"a"`
	IDs     []string `json:"ids"`
}

// readLegacyHeld returns the legacy held sets in tx, by sink name, their
// entries at the hour of now (see above).
func readLegacyHeld(tx *bolt.Tx, now time.Time) (map[string]map[record.Stream][]cursor.Delivered, error) {
	marks := tx.Bucket(bucketMarks)
	if marks == nil {
		return nil, nil
	}
	var out map[string]map[record.Stream][]cursor.Delivered
	err := marks.ForEach(func(key, v []byte) error {
		name, ok := strings.CutSuffix(string(key), legacyHeldSuffix)
		if !ok {
			return nil
		}
		var in []legacyHeld
		if len(v) > 0 {
			if err := json.Unmarshal(v, &in); err != nil {
				return fmt.Errorf("the held set of sink %s (an earlier collector's): %v: %w", name, err, ErrCorrupt)
			}
		}
		if out == nil {
			out = map[string]map[record.Stream][]cursor.Delivered{}
		}
		ks := map[record.Stream][]cursor.Delivered{}
		for _, e := range in {
			k := record.Stream{Source: e.Source, Account: e.Account}
			for _, id := range e.IDs {
				ks[k] = append(ks[k], cursor.DeliveredOf(id, now))
			}
		}
		out[name] = ks
		return nil
	})
	return out, err
}
