package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// DB is the checkpoint on a bbolt file. Every commit is one bbolt write
// transaction with fsync on, so a State is on disk when Commit returns.
//
// A DB is safe for concurrent use; writes are serialized by bbolt. The
// caller closes it. Create it with Open; the zero DB is not usable.
type DB struct {
	path string
	bdb  *bolt.DB
	now  func() time.Time

	// recovered says how Open recovered a damaged file; "" if sound.
	recovered string

	// windowLimit and alertLimit bound each stream's window log and alert
	// marks; dropped* count what the bounds dropped.
	windowLimit, alertLimit       int
	droppedWindows, droppedAlerts atomic.Int64

	// log receives the warnings of damaged delivered-set values
	// (WithLogger); nil logs nothing. damagedSeen holds the values
	// reported, damagedValues counts them.
	log           *slog.Logger
	damageMu      sync.Mutex
	damagedSeen   map[string]struct{}
	damagedValues atomic.Int64

	// mapped is what the reads since the pages were last let go of
	// (letGo) mapped of the file, as estimated (bytes): they are let go
	// of once it reaches unmapAfter.
	mapped atomic.Int64

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// Path returns the file's path.
func (d *DB) Path() string { return d.path }

// Load returns the state of k and whether there is one. A state that
// cannot be decoded is an error (wrapping ErrCorrupt or
// ErrUnknownVersion), never a missing state: a stream must not restart
// from scratch because its checkpoint was unreadable.
func (d *DB) Load(ctx context.Context, k record.Stream) (State, bool, error) {
	if err := d.usable(ctx); err != nil {
		return State{}, false, fmt.Errorf("load checkpoint %s: %w", k, err)
	}
	if err := validateKey(k); err != nil {
		return State{}, false, fmt.Errorf("load checkpoint: %w", err)
	}
	var raw []byte
	var dl cursor.Delays
	err := d.view(func(tx *bolt.Tx) error {
		b, err := d.states(tx)
		if err != nil {
			return err
		}
		// Copy: the value's memory belongs to the transaction.
		raw = bytes.Clone(b.Get(encodeKey(k)))
		dl, err = readDelays(tx, encodeKey(k))
		return err
	})
	if err != nil {
		return State{}, false, fmt.Errorf("load checkpoint %s: %w", k, err)
	}
	if raw == nil {
		return State{}, false, nil
	}
	s, err := decodeState(raw)
	if err != nil {
		return State{}, false, fmt.Errorf("checkpoint file %s: key %s: %w", d.path, k, err)
	}
	s.Delays = dl
	return s, true, nil
}

// Commit durably stores s as the state of k before it returns. A zero
// s.Updated is set to the store's clock.
// A Density that is negative or not finite is stored as 0 (unknown).
func (d *DB) Commit(ctx context.Context, k record.Stream, s State) error {
	return d.apply(ctx, Changes{States: map[record.Stream]State{k: s}}, "commit checkpoint "+k.String())
}

// CommitMany durably stores every state of m in one fsynced transaction:
// either all of them are stored or none. An empty m does nothing.
func (d *DB) CommitMany(ctx context.Context, m map[record.Stream]State) error {
	if len(m) == 0 {
		return nil
	}
	return d.apply(ctx, Changes{States: m}, fmt.Sprintf("commit %d checkpoints", len(m)))
}

// All returns every stored state.
func (d *DB) All(ctx context.Context) (map[record.Stream]State, error) {
	if err := d.usable(ctx); err != nil {
		return nil, fmt.Errorf("load all checkpoints: %w", err)
	}
	return d.all()
}

func (d *DB) all() (map[record.Stream]State, error) {
	var keys, vals [][]byte
	var delays []cursor.Delays
	err := d.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketStates)
		if b == nil {
			return nil // a new file, before prepare created the bucket
		}
		return b.ForEach(func(k, v []byte) error {
			if v == nil {
				return fmt.Errorf("checkpoint file %s: unexpected bucket %q in states: %w", d.path, k, ErrCorrupt)
			}
			dl, err := readDelays(tx, k)
			if err != nil {
				return fmt.Errorf("checkpoint file %s: key %q: %w", d.path, k, err)
			}
			keys = append(keys, bytes.Clone(k))
			vals = append(vals, bytes.Clone(v))
			delays = append(delays, dl)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("load all checkpoints: %w", err)
	}
	out := make(map[record.Stream]State, len(keys))
	for i, raw := range keys {
		k, err := decodeKey(raw)
		if err != nil {
			return nil, fmt.Errorf("checkpoint file %s: %w", d.path, err)
		}
		s, err := decodeState(vals[i])
		if err != nil {
			return nil, fmt.Errorf("checkpoint file %s: key %s: %w", d.path, k, err)
		}
		s.Delays = delays[i]
		out[k] = s
	}
	return out, nil
}

// Reset removes the state, the window log and the alert marks of one
// account of source, or of every account of source when account is "",
// of tenant ("" the one-tenant form: a tenant's streams are not its), and
// returns how many states it removed. The next run starts those streams
// from their configured start.
func (d *DB) Reset(ctx context.Context, tenant, source, account string) (int, error) {
	k := record.Stream{Tenant: tenant, Source: source, Account: account}
	what := "reset checkpoints of " + source
	if tenant != "" {
		what += " of tenant " + tenant
	}
	if account != "" {
		what = "reset checkpoint " + k.String()
	}
	if err := d.usable(ctx); err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	if err := validateKey(k); err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	var n int
	err := d.update(func(tx *bolt.Tx) error {
		b, err := d.states(tx)
		if err != nil {
			return err
		}
		var del [][]byte
		if account != "" {
			if key := encodeKey(k); b.Get(key) != nil {
				del = append(del, key)
			}
		} else {
			// Collect first, delete after: deleting under a cursor can skip
			// keys.
			prefix := sourcePrefix(tenant, source)
			c := b.Cursor()
			for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
				del = append(del, bytes.Clone(k))
			}
		}
		for _, k := range del {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		n = len(del)
		if err := resetHeld(tx, k); err != nil {
			return err
		}
		return resetLogs(tx, k)
	})
	if err != nil {
		return 0, fmt.Errorf("%s in %s: %w", what, d.path, err)
	}
	return n, nil
}

// resetLogs removes the window logs and alert marks of stream k, or of
// every account of k's tenant and source when k.Account is "".
func resetLogs(tx *bolt.Tx, k record.Stream) error {
	for _, name := range [][]byte{bucketWindows, bucketAlerts, bucketDelivered, bucketDelays} {
		if root := tx.Bucket(name); root != nil {
			if err := resetStreams(root, k); err != nil {
				return err
			}
		}
	}
	return nil
}

// resetStreams removes the sub-buckets of root of one account of source,
// or of every account of source when account is "".
func resetStreams(root *bolt.Bucket, s record.Stream) error {
	var del [][]byte
	if s.Account != "" {
		if k := encodeKey(s); root.Bucket(k) != nil {
			del = append(del, k)
		}
	} else {
		prefix := sourcePrefix(s.Tenant, s.Source)
		c := root.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			del = append(del, bytes.Clone(k))
		}
	}
	for _, k := range del {
		if err := root.DeleteBucket(k); err != nil {
			return err
		}
	}
	return nil
}

// Close waits for transactions in progress, releases the file's lock,
// and is safe to call more than once. A method called after Close
// returns an error wrapping ErrClosed.
func (d *DB) Close() error {
	d.closeOnce.Do(func() {
		d.closed.Store(true)
		if err := d.bdb.Close(); err != nil {
			d.closeErr = fmt.Errorf("close checkpoint file %s: %w", d.path, err)
		}
	})
	return d.closeErr
}

func (d *DB) usable(ctx context.Context) error {
	if d.closed.Load() {
		return ErrClosed
	}
	return ctx.Err()
}

func (d *DB) states(tx *bolt.Tx) (*bolt.Bucket, error) {
	b := tx.Bucket(bucketStates)
	if b == nil {
		return nil, fmt.Errorf("checkpoint file %s has no states bucket: %w", d.path, ErrCorrupt)
	}
	return b, nil
}

// view and update run one bbolt transaction. bbolt panics on some kinds of
// corruption, and a fault in its mapping of the file panics with
// SetPanicOnFault on; the transaction is rolled back by bbolt and the panic becomes
// an error naming the file, so a damaged checkpoint stops its streams with a
// clear message instead of crashing the daemon.
func (d *DB) view(fn func(*bolt.Tx) error) (err error) {
	defer d.recoverCorrupt(&err)
	// A fault in the mapped file (it shrank under us) panics too.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return d.mapClosed(d.bdb.View(fn))
}

func (d *DB) update(fn func(*bolt.Tx) error) (err error) {
	defer d.recoverCorrupt(&err)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return d.mapClosed(d.bdb.Update(fn))
}

func (d *DB) recoverCorrupt(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("checkpoint file %s is corrupt (%v): %w", d.path, r, ErrCorrupt)
	}
}

func (d *DB) mapClosed(err error) error {
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return err
}
