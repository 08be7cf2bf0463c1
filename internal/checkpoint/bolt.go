package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/svcexport/collector/internal/record"
)

// Layout of the file: two buckets, created at open.
//
//	meta:   format -> "svcexport-collector-checkpoint", schema -> "1",
//	        created -> RFC 3339 time of creation
//	states: source NUL account -> JSON State with a version field
var (
	bucketMeta   = []byte("meta")
	bucketStates = []byte("states")

	metaFormat  = []byte("format")
	metaSchema  = []byte("schema")
	metaCreated = []byte("created")
)

const (
	formatName = "svcexport-collector-checkpoint"
	// schemaVersion is the version of the file layout (buckets and keys);
	// stateVersion is the version of one value.
	schemaVersion = 1

	// fileMode and dirMode: the checkpoint is readable by its owner only.
	fileMode fs.FileMode = 0o600
	dirMode  fs.FileMode = 0o700

	// DefaultOpenTimeout is how long Open waits for the file lock.
	DefaultOpenTimeout = time.Second
)

// Option tunes Open.
type Option func(*options)

type options struct {
	timeout time.Duration
	now     func() time.Time
}

// WithOpenTimeout sets how long Open waits for the file's lock before it
// fails with ErrLocked. Default DefaultOpenTimeout (1s): a second collector
// on the same file must fail fast and say why, not hang. A non-positive d
// keeps the default; waiting forever is not offered.
func WithOpenTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.timeout = d
		}
	}
}

// WithClock sets the clock used for the file's creation time and for
// State.Updated when a committed State leaves it zero. Default time.Now.
func WithClock(now func() time.Time) Option {
	return func(o *options) {
		if now != nil {
			o.now = now
		}
	}
}

// DB is the bbolt implementation of Store. Every commit is one bbolt write
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

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

var _ Store = (*DB)(nil)

// Open opens the checkpoint file at path. It holds the file's lock until
// Close: a second Open of the same file, from this process or another,
// fails after the open timeout with an error wrapping ErrLocked.
//
// A path that does not exist is created (mode 0600, parent directory 0700)
// atomically: made complete under a temporary name next to it, fsynced,
// then linked into place, so that a crash never leaves an empty or
// half-made checkpoint. Temporary files a crash left behind are removed.
//
// An existing file is verified before anything writes to it: its size and
// meta pages are read and checked without reading past its end, every page
// its last transaction reaches is checked to lie inside the file, and then
// bbolt's consistency check, the layout version and every stored value;
// memory faults and panics in bbolt become errors. Nothing damaged is ever
// taken for a new file, and Open never resets a file. Errors name the file
// and say how to recover:
//
//   - a path that is not a regular file (a directory, a FIFO), a file that
//     is not a bbolt file (a YAML or text file), or another program's bbolt
//     file: ErrNotCheckpoint, a configuration error;
//   - an empty, truncated or otherwise damaged file: ErrCorrupt;
//   - a file of a newer bbolt format or collector schema: ErrUnknownVersion.
//
// One damaged meta page is survivable: bbolt keeps two, the older describing
// the previous transaction, intact. Open then uses the intact one (at worst
// the last commit is lost, so its pages are fetched again) and says so in
// Recovered. When only the meta is damaged, bbolt copes and rewrites the
// page at the next commit; when the page's header is damaged too (a zeroed
// page), bbolt's check cannot run, and Open repairs the file first: it
// proves the repair on a copy, saves the file as PATH.damaged-TIMESTAMP,
// and rewrites the damaged meta page from the intact one. An existing file
// with a wider mode is narrowed to 0600.
func Open(path string, opts ...Option) (*DB, error) {
	o := options{timeout: DefaultOpenTimeout, now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	if path == "" {
		return nil, errors.New("open checkpoint: empty path")
	}
	path = filepath.Clean(path)
	if err := os.MkdirAll(filepath.Dir(path), dirMode); err != nil {
		return nil, fmt.Errorf("open checkpoint file %s: create directory: %w", path, err)
	}
	removeLeftovers(path)

	switch _, err := os.Stat(path); {
	case errors.Is(err, fs.ErrNotExist):
		if err := create(path, o); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("open checkpoint file %s: %w", path, err)
	}

	// Verify read-only first. bbolt's writable open loads the freelist
	// and panics on some damage; a panic inside bolt.Open leaves the file
	// mapped, and the mapping keeps the lock until the process ends. The
	// read-only open does not load it, and the check reports such damage
	// as an error.
	dmg, err := verify(path, path, o.timeout)
	if err != nil {
		return nil, withHint(err)
	}
	var recovered string
	if dmg != nil && len(dmg.fixes) > 0 {
		backup, fixed, err := repair(path, o)
		if err != nil {
			return nil, withHint(err)
		}
		if dmg, err = verify(path, path, o.timeout); err != nil {
			return nil, withHint(err)
		}
		if dmg != nil && len(dmg.fixes) > 0 {
			return nil, withHint(fmt.Errorf("checkpoint file %s: its meta pages are still damaged after a repair (%s): %w", path, strings.Join(dmg.reasons, "; "), ErrCorrupt))
		}
		if fixed != nil {
			recovered = fixed.describe(path, backup)
		}
	}
	if recovered == "" && dmg != nil {
		recovered = dmg.describe(path, "")
	}

	var bdb *bolt.DB
	if err := guard(path, func() (err error) {
		bdb, err = openBolt(path, path, o.timeout, false)
		return err
	}); err != nil {
		return nil, withHint(err)
	}
	if err := narrowMode(path); err != nil {
		_ = bdb.Close()
		return nil, err
	}
	d := &DB{path: path, bdb: bdb, now: o.now, recovered: recovered}
	if err := d.init(); err != nil {
		_ = bdb.Close()
		return nil, err
	}
	return d, nil
}

// Recovered says how Open recovered a damaged file, for the caller to log
// as a warning: which meta page was damaged, which transaction the file was
// opened from, and, if Open repaired the file, where it saved the damaged
// original. It is "" when the file was sound.
func (d *DB) Recovered() string { return d.recovered }

// withHint adds how to recover to an error of Open.
func withHint(err error) error {
	switch {
	case errors.Is(err, ErrNotCheckpoint):
		return fmt.Errorf("%w; set checkpoint.path to the collector's checkpoint file, or to a path that does not exist yet", err)
	case errors.Is(err, ErrUnknownVersion):
		return fmt.Errorf("%w; run the collector version that wrote it, or move it aside to start over from sources.*.start", err)
	case errors.Is(err, ErrCorrupt):
		return fmt.Errorf("%w; move it aside to start over from sources.*.start, or restore a backup", err)
	}
	return err
}

// guard runs fn in a goroutine of its own with runtime/debug.SetPanicOnFault
// on, so that a fault in bbolt's mapping of the file (damage the checks
// before missed, or the file shrinking meanwhile) or a panic in bbolt
// becomes an error wrapping ErrCorrupt instead of killing the process. fn
// must release what it holds with defer. bbolt's check runs in a goroutine
// of bbolt's own, which this does not cover; the walk of every page before
// it keeps it inside the file.
func guard(name string, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		debug.SetPanicOnFault(true)
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("checkpoint file %s is damaged: bbolt failed reading it (%v): %w", name, r, ErrCorrupt)
			}
		}()
		done <- fn()
	}()
	return <-done
}

// openBolt opens the existing file at path with bbolt; name is the file's
// name in messages.
func openBolt(path, name string, timeout time.Duration, readOnly bool) (bdb *bolt.DB, err error) {
	// bbolt may panic while it loads a damaged file, with the file open and
	// locked: close the file at least.
	var file *os.File
	defer func() {
		if r := recover(); r != nil {
			if file != nil {
				_ = file.Close()
			}
			bdb, err = nil, fmt.Errorf("checkpoint file %s is corrupt (%v): %w", name, r, ErrCorrupt)
		}
	}()
	bdb, err = bolt.Open(path, fileMode, &bolt.Options{
		Timeout:  timeout,
		ReadOnly: readOnly,
		OpenFile: func(name string, flag int, perm fs.FileMode) (*os.File, error) {
			// Never create: a new file is made by create, atomically.
			// Never block: the path may have become a FIFO.
			f, err := os.OpenFile(name, flag&^os.O_CREATE|openNonblock, perm)
			file = f
			return f, err
		},
		// Fsync stays on: a Commit returns once its State is on disk, so a
		// crash never takes back a checkpoint the pipeline relied on
		// (STYLE 14).
		NoSync: false,
	})
	switch {
	case err == nil:
		return bdb, nil
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("checkpoint file %s is locked by another process (waited %s): %w", name, timeout, ErrLocked)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum):
		return nil, fmt.Errorf("checkpoint file %s is corrupt or not a bbolt file (%w): %w", name, err, ErrCorrupt)
	case errors.Is(err, berrors.ErrVersionMismatch):
		return nil, fmt.Errorf("checkpoint file %s has an unknown bbolt version (%w): %w", name, err, ErrUnknownVersion)
	default:
		return nil, fmt.Errorf("open checkpoint file %s: %w", name, err)
	}
}

func narrowMode(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("open checkpoint file %s: %w", path, err)
	}
	if fi.Mode().Perm() == fileMode {
		return nil
	}
	if err := os.Chmod(path, fileMode); err != nil {
		return fmt.Errorf("open checkpoint file %s: narrow mode %s to %s: %w", path, fi.Mode().Perm(), fileMode, err)
	}
	return nil
}

// verify checks the existing file at path without writing to it; name is
// the file's name in messages. It holds bbolt's shared lock while it reads,
// so a running collector makes it fail with ErrLocked, never with a torn
// read taken for damage. It returns the damage of the meta pages that bbolt
// survives (nil if none); when that damage has fixes, bbolt's check cannot
// run, and verify stops after the walk: repair, then verify again.
func verify(path, name string, timeout time.Duration) (dmg *damage, err error) {
	f, _, err := openRegular(path, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	err = guard(name, func() error {
		// bbolt's read-only open reads only the two meta pages, within
		// the file, before it maps it; it takes the shared lock first.
		bdb, openErr := openBolt(path, name, timeout, true)
		if openErr == nil {
			defer func() { _ = bdb.Close() }()
		} else if errors.Is(openErr, ErrLocked) {
			return openErr
		}
		fi, err := f.Stat()
		if err != nil {
			return fmt.Errorf("open checkpoint file %s: %w", name, err)
		}
		h, err := readHeader(f, fi.Size())
		if err != nil {
			return fmt.Errorf("open checkpoint file %s: read: %w", name, err)
		}
		if err := h.check(name); err != nil {
			return err
		}
		if openErr != nil {
			if errors.Is(openErr, ErrCorrupt) || errors.Is(openErr, ErrUnknownVersion) {
				return openErr
			}
			return fmt.Errorf("checkpoint file %s is damaged: bbolt cannot open it (%w): %w", name, openErr, ErrCorrupt)
		}
		dmg = h.damage()
		if err := h.walk(f, name); err != nil {
			if dmg != nil {
				return fmt.Errorf("checkpoint file %s is damaged beyond its meta pages (%s): %w", name, strings.Join(dmg.reasons, "; "), err)
			}
			return err
		}
		if dmg != nil && len(dmg.fixes) > 0 {
			return nil // bbolt's check would assert on a meta page header
		}
		return checkContents(&DB{path: name, bdb: bdb})
	})
	return dmg, err
}

// checkContents runs bbolt's consistency check and checks the layout and
// every value.
func checkContents(d *DB) error {
	err := d.view(func(tx *bolt.Tx) error {
		if err := checkTx(tx, d.path); err != nil {
			return err
		}
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			// A file bbolt created but nobody filled is fine; anything
			// else is some other program's file, not to be written into.
			var other []string
			_ = tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
				other = append(other, string(name))
				return nil
			})
			if len(other) > 0 {
				return fmt.Errorf("checkpoint file %s is not a collector checkpoint (no meta bucket, buckets %q): %w", d.path, other, ErrNotCheckpoint)
			}
			return nil
		}
		if f := meta.Get(metaFormat); !bytes.Equal(f, []byte(formatName)) {
			return fmt.Errorf("checkpoint file %s is not a collector checkpoint (format %q): %w", d.path, f, ErrNotCheckpoint)
		}
		raw := meta.Get(metaSchema)
		v, err := strconv.Atoi(string(raw))
		if err != nil {
			return fmt.Errorf("checkpoint file %s: schema version %q: %w", d.path, raw, ErrCorrupt)
		}
		if v != schemaVersion {
			return fmt.Errorf("checkpoint file %s has schema version %d, this collector reads version %d: %w", d.path, v, schemaVersion, ErrUnknownVersion)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Every value must decode now rather than in the middle of a run.
	_, err = d.all()
	return err
}

// init creates the buckets and the meta values of a new file; on a verified
// file it writes nothing.
func (d *DB) init() error {
	var ready bool
	if err := d.view(func(tx *bolt.Tx) error {
		ready = tx.Bucket(bucketMeta) != nil && tx.Bucket(bucketStates) != nil
		return nil
	}); err != nil {
		return fmt.Errorf("open checkpoint file %s: %w", d.path, err)
	}
	if ready {
		return nil
	}
	created := []byte(d.now().UTC().Format(time.RFC3339Nano))
	err := d.update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if meta.Get(metaFormat) == nil {
			for k, v := range map[string][]byte{
				string(metaFormat):  []byte(formatName),
				string(metaSchema):  []byte(strconv.Itoa(schemaVersion)),
				string(metaCreated): created,
			} {
				if err := meta.Put([]byte(k), v); err != nil {
					return err
				}
			}
		}
		_, err = tx.CreateBucketIfNotExists(bucketStates)
		return err
	})
	if err != nil {
		return fmt.Errorf("initialize checkpoint file %s: %w", d.path, err)
	}
	return nil
}

// checkTx runs bbolt's consistency check; the file is small, so it is cheap.
func checkTx(tx *bolt.Tx, path string) error {
	var errs []error
	for err := range tx.Check() {
		// Drain the channel so that the checker's goroutine ends.
		if len(errs) < 5 {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("checkpoint file %s failed the consistency check: %w: %w", path, errors.Join(errs...), ErrCorrupt)
	}
	return nil
}

// Path returns the file's path.
func (d *DB) Path() string { return d.path }

// Load implements Store.
func (d *DB) Load(ctx context.Context, k record.Stream) (State, bool, error) {
	if err := d.usable(ctx); err != nil {
		return State{}, false, fmt.Errorf("load checkpoint %s: %w", k, err)
	}
	if err := validateKey(k); err != nil {
		return State{}, false, fmt.Errorf("load checkpoint: %w", err)
	}
	var raw []byte
	err := d.view(func(tx *bolt.Tx) error {
		b, err := d.states(tx)
		if err != nil {
			return err
		}
		// Copy: the value's memory belongs to the transaction.
		raw = bytes.Clone(b.Get(encodeKey(k)))
		return nil
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
	return s, true, nil
}

// Commit implements Store. A zero s.Updated is set to the store's clock.
// A Density that is negative or not finite is stored as 0 (unknown).
func (d *DB) Commit(ctx context.Context, k record.Stream, s State) error {
	return d.commit(ctx, map[record.Stream]State{k: s}, "commit checkpoint "+k.String())
}

// CommitMany implements Store: all of m in one fsynced transaction.
func (d *DB) CommitMany(ctx context.Context, m map[record.Stream]State) error {
	if len(m) == 0 {
		return nil
	}
	return d.commit(ctx, m, fmt.Sprintf("commit %d checkpoints", len(m)))
}

func (d *DB) commit(ctx context.Context, m map[record.Stream]State, what string) error {
	if err := d.usable(ctx); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	type kv struct{ k, v []byte }
	puts := make([]kv, 0, len(m))
	now := time.Time{}
	for k, s := range m {
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
	err := d.update(func(tx *bolt.Tx) error {
		b, err := d.states(tx)
		if err != nil {
			return err
		}
		for _, p := range puts {
			if err := b.Put(p.k, p.v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s to %s: %w", what, d.path, err)
	}
	return nil
}

// All implements Store.
func (d *DB) All(ctx context.Context) (map[record.Stream]State, error) {
	if err := d.usable(ctx); err != nil {
		return nil, fmt.Errorf("load all checkpoints: %w", err)
	}
	return d.all()
}

func (d *DB) all() (map[record.Stream]State, error) {
	var keys, vals [][]byte
	err := d.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketStates)
		if b == nil {
			return nil // a new file, before prepare created the bucket
		}
		return b.ForEach(func(k, v []byte) error {
			if v == nil {
				return fmt.Errorf("checkpoint file %s: unexpected bucket %q in states: %w", d.path, k, ErrCorrupt)
			}
			keys = append(keys, bytes.Clone(k))
			vals = append(vals, bytes.Clone(v))
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
		out[k] = s
	}
	return out, nil
}

// Reset implements Store.
func (d *DB) Reset(ctx context.Context, source, account string) (int, error) {
	what := "reset checkpoints of " + source
	if account != "" {
		what = "reset checkpoint " + record.Stream{Source: source, Account: account}.String()
	}
	if err := d.usable(ctx); err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	if err := validateKey(record.Stream{Source: source, Account: account}); err != nil {
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
			if k := encodeKey(record.Stream{Source: source, Account: account}); b.Get(k) != nil {
				del = append(del, k)
			}
		} else {
			// Collect first, delete after: deleting under a cursor can skip
			// keys.
			prefix := sourcePrefix(source)
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
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("%s in %s: %w", what, d.path, err)
	}
	return n, nil
}

// Close implements Store. It waits for transactions in progress, releases
// the file's lock, and is safe to call more than once.
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
