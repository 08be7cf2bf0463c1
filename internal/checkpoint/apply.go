package checkpoint

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// Default bounds of the per-stream logs (WithWindowLimit, WithAlertLimit).
const (
	// DefaultWindowLimit bounds a stream's window log: 10,000 entries are
	// more than a day of 10-second windows, and about 1.5 MB.
	DefaultWindowLimit = 10_000
	// DefaultAlertLimit bounds a stream's alert marks, as the poller's
	// in-memory tracker does (about 60 bytes a mark on disk).
	DefaultAlertLimit = 1 << 20
)

// Changes are what one Apply stores, in one transaction: either all of it
// or nothing. The zero value stores nothing.
//
// At-least-once: the pipeline puts a stream's State, its window log
// entries and its alert marks into Changes only after the sink
// acknowledged every page they cover. A window log entry is written only
// when the window's pages are acknowledged, and an alert mark only when
// the alert's record is; a crash before the commit loses the entry or the
// mark, never a record: the window is fetched again (its records come
// twice, with the same C7 ids) and the alert is emitted again.
type Changes struct {
	// States are stored as Commit stores them.
	States map[record.Stream]State
	// Windows change the streams' window logs.
	Windows map[record.Stream]cursor.WindowChanges
	// Alerts change the streams' alert marks.
	Alerts map[record.Stream]cursor.AlertChanges
	// Delivered add to the streams' delivered sets (cursor.Delivered):
	// the records the pages of States delivered. A stream's set is cut, in
	// the same transaction, before the earliest time it may still ask
	// again (its watermark, the window in flight, its oldest window log
	// entry).
	Delivered map[record.Stream][]cursor.Delivered
	// Marks are the sinks' marks (sink.Ledger.Mark) by sink name: where
	// each sink stood when the pages these changes cover were stored.
	Marks map[string][]byte
	// Held add to the sinks' held sets, by sink name and stream: what a
	// sink holds beyond the checkpoint (sink.Ledger.Recover). They are
	// stored as the delivered sets are, and a stream's are cut with its
	// delivered set, no later than its alert marks (heldsets.go).
	Held map[string]map[record.Stream][]cursor.Delivered
}

// Merge folds later, changes that come after c, into c (State: the later
// wins; window logs and alert marks: cursor.WindowChanges.Merge and
// cursor.AlertChanges.Merge). Maps of c are created as needed; later is not
// changed.
func (c *Changes) Merge(later Changes) {
	if len(later.States) > 0 {
		if c.States == nil {
			c.States = make(map[record.Stream]State, len(later.States))
		}
		maps.Copy(c.States, later.States)
	}
	for k, w := range later.Windows {
		if c.Windows == nil {
			c.Windows = map[record.Stream]cursor.WindowChanges{}
		}
		cw := c.Windows[k]
		cw.Merge(w)
		c.Windows[k] = cw
	}
	for name, m := range later.Marks {
		if c.Marks == nil {
			c.Marks = map[string][]byte{}
		}
		c.Marks[name] = m
	}
	for k, d := range later.Delivered {
		if c.Delivered == nil {
			c.Delivered = map[record.Stream][]cursor.Delivered{}
		}
		c.Delivered[k] = append(c.Delivered[k], d...)
	}
	for name, ks := range later.Held {
		if c.Held == nil {
			c.Held = map[string]map[record.Stream][]cursor.Delivered{}
		}
		if c.Held[name] == nil {
			c.Held[name] = map[record.Stream][]cursor.Delivered{}
		}
		for k, d := range ks {
			c.Held[name][k] = append(c.Held[name][k], d...)
		}
	}
	for k, a := range later.Alerts {
		if c.Alerts == nil {
			c.Alerts = map[record.Stream]cursor.AlertChanges{}
		}
		ca := c.Alerts[k]
		ca.Merge(a)
		c.Alerts[k] = ca
	}
}

// Empty reports whether c stores nothing.
func (c Changes) Empty() bool {
	for _, w := range c.Windows {
		if !w.Empty() {
			return false
		}
	}
	for _, a := range c.Alerts {
		if !a.Empty() {
			return false
		}
	}
	for _, d := range c.Delivered {
		if len(d) > 0 {
			return false
		}
	}
	for _, ks := range c.Held {
		for _, d := range ks {
			if len(d) > 0 {
				return false
			}
		}
	}
	return len(c.States) == 0 && len(c.Marks) == 0
}

// Apply durably stores every change of c in one fsynced transaction:
// states, window log entries and alert marks together, or none of them
// (Changes says when the pipeline may put what into it). A zero
// State.Updated is set to the store's clock. An invalid key, window or
// alert uuid stores nothing and is an error.
func (d *DB) Apply(ctx context.Context, c Changes) error {
	return d.apply(ctx, c, fmt.Sprintf("commit %d checkpoints, %d window logs and %d alert marks", len(c.States), len(c.Windows), len(c.Alerts)))
}

func (d *DB) apply(ctx context.Context, c Changes, what string) error {
	if err := d.usable(ctx); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if c.Empty() {
		return nil
	}
	type kv struct{ k, v []byte }
	puts := make([]kv, 0, len(c.States))
	now := time.Time{}
	for k, s := range c.States {
		if err := validateKey(k); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if s.Updated.IsZero() {
			if now.IsZero() {
				now = d.now()
			}
			s.Updated = now
		}
		v, err := encodeState(s)
		if err != nil {
			return fmt.Errorf("%s: key %s: %w", what, k, err)
		}
		puts = append(puts, kv{encodeKey(k), v})
	}
	for k, w := range c.Windows {
		if err := validateKey(k); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		for _, e := range w.Put {
			if err := validWindow(e); err != nil {
				return fmt.Errorf("%s: window log of %s: %w", what, k, err)
			}
		}
	}
	for k := range c.Alerts {
		if err := validateKey(k); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	for k := range c.Delivered {
		if err := validateKey(k); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	for _, ks := range c.Held {
		for k := range ks {
			if err := validateKey(k); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
		}
	}
	convertedAt := d.now() // when an earlier collector's held sets are converted (heldsets.go)
	dkeys := slices.SortedFunc(maps.Keys(c.Delivered), compareStreams)
	skeys := slices.SortedFunc(maps.Keys(c.States), compareStreams)
	// Streams in a fixed order: the same changes make the same file.
	wkeys := slices.SortedFunc(maps.Keys(c.Windows), compareStreams)
	akeys := slices.SortedFunc(maps.Keys(c.Alerts), compareStreams)
	var droppedW, droppedA int
	var mapped int64
	err := d.update(func(tx *bolt.Tx) error {
		droppedW, droppedA = 0, 0
		b, err := d.states(tx)
		if err != nil {
			return err
		}
		for _, p := range puts {
			if err := b.Put(p.k, p.v); err != nil {
				return err
			}
		}
		for _, k := range wkeys {
			n, err := applyWindows(tx, encodeKey(k), c.Windows[k], d.windowLimit)
			if err != nil {
				return fmt.Errorf("window log of %s: %w", k, err)
			}
			droppedW += n
		}
		for _, k := range akeys {
			n, err := applyAlerts(tx, encodeKey(k), c.Alerts[k], d.alertLimit)
			if err != nil {
				return fmt.Errorf("alert marks of %s: %w", k, err)
			}
			droppedA += n
		}
		for _, k := range dkeys {
			if err := applyDelivered(tx, encodeKey(k), c.Delivered[k]); err != nil {
				return fmt.Errorf("delivered set of %s: %w", k, err)
			}
		}
		if err := applyMarks(tx, c.Marks); err != nil {
			return fmt.Errorf("sink marks: %w", err)
		}
		if err := applyHeld(tx, c.Held, convertedAt); err != nil {
			return fmt.Errorf("the sinks' held sets: %w", err)
		}
		for _, k := range skeys {
			key := encodeKey(k)
			if err := putDelays(tx, key, c.States[k].Delays); err != nil {
				return fmt.Errorf("delays of %s: %w", k, err)
			}
			cutoff := deliveredCutoff(tx, key, c.States[k])
			if err := pruneDelivered(tx, key, cutoff); err != nil {
				return fmt.Errorf("delivered set of %s: %w", k, err)
			}
			if err := pruneHeld(tx, key, heldCutoff(tx, key, cutoff, c.Alerts[k])); err != nil {
				return fmt.Errorf("the sinks' held sets of %s: %w", k, err)
			}
		}
		mapped = commitMapped(tx)
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s to %s: %w", what, d.path, err)
	}
	d.droppedWindows.Add(int64(droppedW))
	d.droppedAlerts.Add(int64(droppedA))
	d.committed(mapped)
	return nil
}

// unmapAfter is how much of the file (bytes, as estimated) reads and
// commits may map into the process before its pages are let go of
// (letGo).
const unmapAfter = 1 << 20

// letGo lets go of the pages of the file that reads and commits mapped
// into the process (unmapPages) once they mapped unmapAfter bytes or
// more since the last time; n is what the read or commit of tx just
// mapped, as estimated. A delivered set is read where it is asked again
// (DeliveredOf, DeliveredCounts), and a backfill asks again within every
// window it has begun: without letting go, every page of the sets the
// run ever read stays mapped, and counts in the collector's resident
// memory, so that a 2-day backfill's grew with the backlog (about 19
// bytes a record, 50 MiB at 2.7 million records); with it, what is
// mapped stays about unmapAfter. Letting go at every read and commit
// bounded it lower, but a tailing stream's reads and commits touch a
// few pages each, and every one faulted the tree's top back in: with 180
// caught-up streams, the madvise calls and the faults after them were a
// fifth of the collector's CPU (docs/performance.md, "What a tailing
// poll costs"). The pages stay in the page cache, which the kernel
// reclaims as it needs. A failure costs nothing but the memory; it is
// not reported. Call it inside tx.
func (d *DB) letGo(tx *bolt.Tx, n int64) {
	if d.mapped.Add(n) < unmapAfter {
		return
	}
	d.mapped.Store(0)
	_ = unmapPages(d.bdb.Info().Data, tx.Size())
}

// committed is letGo after a commit (apply) that mapped n bytes.
func (d *DB) committed(n int64) {
	_ = d.view(func(tx *bolt.Tx) error {
		d.letGo(tx, n)
		return nil
	})
}

// commitMapped estimates what the commit of tx mapped of the file: a
// page for each node it read to change and for each cursor's path.
func commitMapped(tx *bolt.Tx) int64 {
	st := tx.Stats()
	return (st.GetNodeCount() + 4*st.GetCursorCount() + 4) * int64(tx.DB().Info().PageSize)
}

func compareStreams(a, b record.Stream) int {
	if a.Tenant != b.Tenant {
		if a.Tenant < b.Tenant {
			return -1
		}
		return 1
	}
	if a.Source != b.Source {
		if a.Source < b.Source {
			return -1
		}
		return 1
	}
	switch {
	case a.Account < b.Account:
		return -1
	case a.Account > b.Account:
		return 1
	}
	return 0
}

// Windows returns the window log of k, sorted by start; empty when k has
// none.
func (d *DB) Windows(ctx context.Context, k record.Stream) ([]cursor.LoggedWindow, error) {
	if err := d.usable(ctx); err != nil {
		return nil, fmt.Errorf("load window log of %s: %w", k, err)
	}
	if err := validateKey(k); err != nil {
		return nil, fmt.Errorf("load window log: %w", err)
	}
	var out []cursor.LoggedWindow
	err := d.view(func(tx *bolt.Tx) (err error) {
		out, err = readWindows(tx, encodeKey(k))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoint file %s: window log of %s: %w", d.path, k, err)
	}
	return out, nil
}

// Alerts returns the alert marks of k by uuid; empty when k has none.
func (d *DB) Alerts(ctx context.Context, k record.Stream) (map[string]cursor.AlertMark, error) {
	if err := d.usable(ctx); err != nil {
		return nil, fmt.Errorf("load alert marks of %s: %w", k, err)
	}
	if err := validateKey(k); err != nil {
		return nil, fmt.Errorf("load alert marks: %w", err)
	}
	var out map[string]cursor.AlertMark
	err := d.view(func(tx *bolt.Tx) (err error) {
		out, err = readAlerts(tx, encodeKey(k))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoint file %s: alert marks of %s: %w", d.path, k, err)
	}
	return out, nil
}

// Dropped returns how many window log entries and alert marks the bounds
// (WithWindowLimit, WithAlertLimit) dropped since Open: entries a stream
// could not keep because it had too many, oldest first. A dropped window
// is never rechecked; a dropped alert is emitted again if it changes.
func (d *DB) Dropped() (windows, alerts int64) {
	return d.droppedWindows.Load(), d.droppedAlerts.Load()
}

// checkLogs decodes every window log entry and alert mark in tx, so that
// Open finds a damaged one rather than a stream in the middle of a run.
func checkLogs(tx *bolt.Tx) error {
	for _, name := range [][]byte{bucketWindows, bucketAlerts} {
		root := tx.Bucket(name)
		if root == nil {
			continue // a file of a version before the logs
		}
		err := root.ForEach(func(key, v []byte) error {
			if v != nil {
				return fmt.Errorf("unexpected value %q in bucket %s: %w", key, name, ErrCorrupt)
			}
			k, err := decodeKey(key)
			if err != nil {
				return err
			}
			if bytes.Equal(name, bucketWindows) {
				_, err = readWindows(tx, encodeKey(k))
			} else {
				_, err = readAlerts(tx, encodeKey(k))
			}
			if err != nil {
				return fmt.Errorf("%s of %s: %w", name, k, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
