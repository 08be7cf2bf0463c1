package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/svcexport/collector/internal/checkpoint/boltfile"
)

// Layout of the file: four buckets, created at open.
//
//	meta:    format -> "svcexport-collector-checkpoint", schema -> "1",
//	         created -> RFC 3339 time of creation
//	states:  source NUL account -> JSON State with a version field
//	windows: source NUL account -> bucket of the stream's window log:
//	         start (8 bytes, sorting as times) -> JSON cursor.LoggedWindow with a version
//	         field; the bucket's sequence is the number of entries
//	alerts:  source NUL account -> bucket of the stream's alert marks
//	         (logalerts.go); its sequence is the number of marks
//
// The windows and alerts buckets came after the first files were written,
// under the same schema version 1: they only add, and their absence means
// empty logs. A file without them (testdata/v1-2968b7c.db) opens as it
// was and gets them at its first Open; a collector that predates them
// opens a newer file and never looks at them (it checks the meta and
// states buckets only). Their values carry versions of their own
// (windowVersion, alertVersion); a change of meaning bumps those, a change
// of the layout bumps schemaVersion.
var (
	bucketMeta    = []byte("meta")
	bucketStates  = []byte("states")
	bucketWindows = []byte("windows")
	bucketAlerts  = []byte("alerts")

	metaFormat  = []byte("format")
	metaSchema  = []byte("schema")
	metaCreated = []byte("created")
)

const (
	formatName = "svcexport-collector-checkpoint"
	// schemaVersion is the version of the file layout (buckets and keys);
	// stateVersion is the version of one value.
	schemaVersion = 1

	// DefaultOpenTimeout is how long Open waits for the file lock.
	DefaultOpenTimeout = time.Second
)

// Option tunes Open.
type Option func(*options)

type options struct {
	timeout                 time.Duration
	now                     func() time.Time
	windowLimit, alertLimit int
	log                     *slog.Logger
}

// WithLogger sets where the DB logs what it meets at run time: a damaged
// value of a delivered set (DamagedValues). Default: nothing is
// logged.
func WithLogger(log *slog.Logger) Option {
	return func(o *options) { o.log = log }
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

// WithWindowLimit bounds each stream's window log to n entries; past it
// Apply drops the oldest entries (DB.Dropped counts them). Default
// DefaultWindowLimit. A non-positive n keeps the default.
func WithWindowLimit(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.windowLimit = n
		}
	}
}

// WithAlertLimit bounds each stream's alert marks to n; past it Apply
// forgets the alerts created longest ago (DB.Dropped counts them). Default
// DefaultAlertLimit. A non-positive n keeps the default.
func WithAlertLimit(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.alertLimit = n
		}
	}
}

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
	o := options{timeout: DefaultOpenTimeout, now: time.Now, windowLimit: DefaultWindowLimit, alertLimit: DefaultAlertLimit}
	for _, opt := range opts {
		opt(&o)
	}
	if path == "" {
		return nil, errors.New("open checkpoint: empty path")
	}
	path = filepath.Clean(path)
	if err := os.MkdirAll(filepath.Dir(path), boltfile.DirMode); err != nil {
		return nil, fmt.Errorf("open checkpoint file %s: create directory: %w", path, err)
	}
	boltfile.RemoveLeftovers(path)

	switch _, err := os.Stat(path); {
	case errors.Is(err, fs.ErrNotExist):
		if err := boltfile.Create(path, o.timeout, func(bdb *bolt.DB) error {
			return (&DB{path: path, bdb: bdb, now: o.now}).init()
		}); err != nil {
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
	dmg, err := boltfile.Verify(path, path, o.timeout, checkContents)
	if err != nil {
		return nil, withHint(err)
	}
	var recovered string
	if dmg.NeedsRepair() {
		backup, fixed, err := boltfile.Repair(path, o.timeout, o.now(), checkContents)
		if err != nil {
			return nil, withHint(err)
		}
		if dmg, err = boltfile.Verify(path, path, o.timeout, checkContents); err != nil {
			return nil, withHint(err)
		}
		if dmg.NeedsRepair() {
			return nil, withHint(fmt.Errorf("checkpoint file %s: its meta pages are still damaged after a repair (%s): %w", path, strings.Join(dmg.Reasons(), "; "), ErrCorrupt))
		}
		if fixed != nil {
			recovered = fixed.Describe(path, backup)
		}
	}
	if recovered == "" && dmg != nil {
		recovered = dmg.Describe(path, "")
	}

	var bdb *bolt.DB
	if err := boltfile.Guard(path, func() (err error) {
		bdb, err = boltfile.Open(path, path, o.timeout, false)
		return err
	}); err != nil {
		return nil, withHint(err)
	}
	if err := boltfile.NarrowMode(path); err != nil {
		_ = bdb.Close()
		return nil, err
	}
	d := &DB{path: path, bdb: bdb, now: o.now, recovered: recovered, windowLimit: o.windowLimit, alertLimit: o.alertLimit, log: o.log}
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

// checkContents runs bbolt's consistency check and checks the layout and
// every value of the file opened as db; name is the file's name in
// messages (a boltfile.Check).
func checkContents(db *bolt.DB, name string) error {
	d := &DB{path: name, bdb: db}
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
		if err := checkLogs(tx); err != nil {
			return fmt.Errorf("checkpoint file %s: %w", d.path, err)
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
		ready = tx.Bucket(bucketMeta) != nil && tx.Bucket(bucketStates) != nil &&
			tx.Bucket(bucketWindows) != nil && tx.Bucket(bucketAlerts) != nil
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
		for _, name := range [][]byte{bucketStates, bucketWindows, bucketAlerts} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
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
