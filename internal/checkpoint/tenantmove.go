package checkpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Moving a tenant between collectors (docs/tenants.md, "More
// collectors"). Each shard's checkpoint is its own file on its own
// volume (bbolt must not be shared over a network file system), so a
// tenant that changes shard takes its progress along by a command:
// ExportTenant on the old shard's file, ImportTenant on the new one's,
// DropTenant on the old one's, every collector stopped. A tenant's
// progress is every key under "TENANT/" (tenantSep) in the buckets
// tenantBuckets lists; the meta and the sinks' marks are the file's
// and the sinks', not a tenant's (a mark is per sink: a graceful stop
// commits everything written, so nothing past a mark is the moved
// tenant's).

// tenantBucket is a top-level bucket that holds streams' values: under
// depth levels of sub-buckets that are not a tenant's (the held sets'
// sink names), a tenant's entries are the keys that start with its
// prefix, values (states) or sub-buckets (a stream's log or set).
type tenantBucket struct {
	name  []byte
	depth int
}

// tenantBuckets lists every bucket that holds a tenant's progress; every
// other bucket of the file is in sharedBuckets. This is the one place
// that knows them all: a new bucket must be added to one of the two
// (TestEveryBucketIsATenantsOrShared fails until it is).
func tenantBuckets() []tenantBucket {
	return []tenantBucket{
		{name: bucketStates},
		{name: bucketWindows},
		{name: bucketAlerts},
		{name: bucketDelivered},
		{name: bucketDelays},
		{name: bucketHeld, depth: 1},
	}
}

// sharedBuckets are the buckets that are no tenant's: the file's meta,
// and the sinks' marks (per sink; the held sets of collectors before
// them, in the marks bucket, predate tenants and are the one-tenant
// form's).
func sharedBuckets() [][]byte { return [][]byte{bucketMeta, bucketMarks} }

// exportFormat names a tenant's export file.
const exportFormat = "svcexport-collector-tenant-export"

// ErrTenantHeld is ImportTenant's error when the checkpoint already holds
// progress of the file's tenant (and force is off).
var ErrTenantHeld = errors.New("the checkpoint already holds progress of the tenant")

// tenantExport is the export file: JSON, versioned by the checkpoint's
// schema and state versions (an import refuses others), the tenant's
// entries verbatim.
type tenantExport struct {
	Format   string        `json:"format"`
	Schema   int           `json:"schema"`
	State    int           `json:"state_version"`
	Tenant   string        `json:"tenant"`
	From     string        `json:"from"`
	Exported time.Time     `json:"exported"`
	Entries  []exportEntry `json:"entries"`
}

// exportEntry is one of a tenant's keys: the path of buckets to it
// (bucket name, then the sink name for a held set), and its value or its
// sub-bucket.
type exportEntry struct {
	Path [][]byte   `json:"path"`
	Node exportNode `json:"node"`
}

// exportNode is a key and its value, or a bucket (Bucket, its sequence
// and its keys).
type exportNode struct {
	Key      []byte       `json:"k"`
	Value    []byte       `json:"v,omitempty"`
	Bucket   bool         `json:"b,omitempty"`
	Seq      uint64       `json:"seq,omitempty"`
	Children []exportNode `json:"c,omitempty"`
}

// TenantMoved says what ExportTenant, ImportTenant or DropTenant moved.
type TenantMoved struct {
	Tenant string
	// Streams is the number of the tenant's stream states; Keys every key
	// of its, sub-buckets and their values included.
	Streams, Keys int
}

func tenantPrefix(tenant string) ([]byte, error) {
	if tenant == "" || strings.Contains(tenant, tenantSep) || strings.Contains(tenant, keySep) {
		return nil, fmt.Errorf("tenant %q: a tenant's name is not empty and holds no %q or NUL: %w", tenant, tenantSep, ErrInvalidKey)
	}
	return []byte(tenant + tenantSep), nil
}

// ExportTenant writes every key of tenant's progress (its streams'
// states, window logs, alert marks, delivered sets, delays and the sinks'
// held sets of its streams) to a new file at path, atomically; it removes
// nothing. Run it with the collector stopped (Open holds the file's
// lock). A tenant without progress in the file is an error.
func (d *DB) ExportTenant(ctx context.Context, tenant, path string) (TenantMoved, error) {
	what := fmt.Sprintf("export tenant %s of %s", tenant, d.path)
	prefix, err := tenantPrefix(tenant)
	if err != nil {
		return TenantMoved{}, fmt.Errorf("%s: %w", what, err)
	}
	if err := d.usable(ctx); err != nil {
		return TenantMoved{}, fmt.Errorf("%s: %w", what, err)
	}
	out := tenantExport{Format: exportFormat, Schema: schemaVersion, State: stateVersion, Tenant: tenant, From: d.path, Exported: d.now().UTC()}
	moved := TenantMoved{Tenant: tenant}
	err = d.view(func(tx *bolt.Tx) error {
		return eachTenantKey(tx, prefix, func(path [][]byte, parent *bolt.Bucket, k []byte) {
			n := copyNode(parent, k, &moved.Keys)
			if bytes.Equal(path[0], bucketStates) {
				moved.Streams++
			}
			out.Entries = append(out.Entries, exportEntry{Path: clonePath(path), Node: n})
		})
	})
	if err != nil {
		return TenantMoved{}, fmt.Errorf("%s: %w", what, err)
	}
	if len(out.Entries) == 0 {
		return TenantMoved{}, fmt.Errorf("%s: the checkpoint holds no progress of tenant %s", what, tenant)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return TenantMoved{}, fmt.Errorf("%s: %w", what, err)
	}
	if err := writeFileAtomic(path, b); err != nil {
		return TenantMoved{}, fmt.Errorf("%s: %w", what, err)
	}
	return moved, nil
}

// ImportTenant adds the tenant's progress that ExportTenant wrote to
// path, in one transaction. It refuses a file of another format or
// checkpoint version, and a checkpoint that already holds progress of
// the tenant (ErrTenantHeld) unless force, which first removes that
// progress. Run it with the collector stopped.
func (d *DB) ImportTenant(ctx context.Context, path string, force bool) (TenantMoved, error) {
	what := fmt.Sprintf("import %s into %s", path, d.path)
	raw, err := os.ReadFile(path)
	if err != nil {
		return TenantMoved{}, fmt.Errorf("%s: %w", what, err)
	}
	var in tenantExport
	if err := json.Unmarshal(raw, &in); err != nil || in.Format != exportFormat {
		return TenantMoved{}, fmt.Errorf("%s: not a tenant's export (collector state --export-tenant): %w", what, ErrCorrupt)
	}
	if in.Schema != schemaVersion || in.State != stateVersion {
		return TenantMoved{}, fmt.Errorf("%s: an export of checkpoint schema %d, state version %d; this collector's are %d and %d: import it with the collector version that exported it: %w",
			what, in.Schema, in.State, schemaVersion, stateVersion, ErrUnknownVersion)
	}
	prefix, err := tenantPrefix(in.Tenant)
	if err != nil {
		return TenantMoved{}, fmt.Errorf("%s: %w", what, err)
	}
	if err := d.usable(ctx); err != nil {
		return TenantMoved{}, fmt.Errorf("%s: %w", what, err)
	}
	moved := TenantMoved{Tenant: in.Tenant}
	err = d.update(func(tx *bolt.Tx) error {
		held, err := dropTenant(tx, prefix)
		if err != nil {
			return err
		}
		if held.Keys > 0 && !force {
			return fmt.Errorf("%d stream(s) of tenant %s (drop them first, or --force to replace them): %w", held.Streams, in.Tenant, ErrTenantHeld)
		}
		for _, e := range in.Entries {
			if len(e.Path) == 0 || !isTenantBucket(e.Path[0]) || !bytes.HasPrefix(e.Node.Key, prefix) {
				return fmt.Errorf("entry %q/%q is not tenant %s's: %w", e.Path, e.Node.Key, in.Tenant, ErrCorrupt)
			}
			b, err := tx.CreateBucketIfNotExists(e.Path[0])
			if err != nil {
				return err
			}
			for _, p := range e.Path[1:] {
				if b, err = b.CreateBucketIfNotExists(p); err != nil {
					return err
				}
			}
			if err := putNode(b, e.Node, &moved.Keys); err != nil {
				return err
			}
			if bytes.Equal(e.Path[0], bucketStates) {
				moved.Streams++
			}
		}
		return nil
	})
	if err != nil {
		return TenantMoved{}, fmt.Errorf("%s: %w", what, err)
	}
	return moved, nil
}

// DropTenant removes every key of tenant's progress, in one transaction,
// and says what it removed (nothing is not an error). Run it with the
// collector stopped, after the tenant's import on its new shard.
func (d *DB) DropTenant(ctx context.Context, tenant string) (TenantMoved, error) {
	what := fmt.Sprintf("drop tenant %s from %s", tenant, d.path)
	prefix, err := tenantPrefix(tenant)
	if err != nil {
		return TenantMoved{}, fmt.Errorf("%s: %w", what, err)
	}
	if err := d.usable(ctx); err != nil {
		return TenantMoved{}, fmt.Errorf("%s: %w", what, err)
	}
	var moved TenantMoved
	err = d.update(func(tx *bolt.Tx) error {
		moved, err = dropTenant(tx, prefix)
		return err
	})
	if err != nil {
		return TenantMoved{}, fmt.Errorf("%s: %w", what, err)
	}
	moved.Tenant = tenant
	return moved, nil
}

func isTenantBucket(name []byte) bool {
	for _, tb := range tenantBuckets() {
		if bytes.Equal(tb.name, name) {
			return true
		}
	}
	return false
}

// eachTenantKey calls fn for every key under prefix in the tenant
// buckets of tx, with the path of buckets to it and its bucket.
func eachTenantKey(tx *bolt.Tx, prefix []byte, fn func(path [][]byte, parent *bolt.Bucket, k []byte)) error {
	var walk func(path [][]byte, b *bolt.Bucket, depth int) error
	walk = func(path [][]byte, b *bolt.Bucket, depth int) error {
		if depth > 0 {
			return b.ForEachBucket(func(name []byte) error {
				return walk(append(path, name), b.Bucket(name), depth-1)
			})
		}
		c := b.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			fn(path, b, k)
		}
		return nil
	}
	for _, tb := range tenantBuckets() {
		if root := tx.Bucket(tb.name); root != nil {
			if err := walk([][]byte{tb.name}, root, tb.depth); err != nil {
				return err
			}
		}
	}
	return nil
}

// dropTenant removes every key under prefix in the tenant buckets of tx
// and counts them.
func dropTenant(tx *bolt.Tx, prefix []byte) (TenantMoved, error) {
	type doomed struct {
		parent *bolt.Bucket
		key    []byte
		bucket bool
	}
	var del []doomed
	var moved TenantMoved
	err := eachTenantKey(tx, prefix, func(path [][]byte, parent *bolt.Bucket, k []byte) {
		// Collect first, delete after: deleting under a cursor can skip keys.
		copyNode(parent, k, &moved.Keys)
		if bytes.Equal(path[0], bucketStates) {
			moved.Streams++
		}
		del = append(del, doomed{parent: parent, key: bytes.Clone(k), bucket: parent.Bucket(k) != nil})
	})
	if err != nil {
		return TenantMoved{}, err
	}
	for _, x := range del {
		var err error
		if x.bucket {
			err = x.parent.DeleteBucket(x.key)
		} else {
			err = x.parent.Delete(x.key)
		}
		if err != nil {
			return TenantMoved{}, err
		}
	}
	return moved, nil
}

// copyNode copies key k of b (its value, or its sub-bucket whole) out of
// the transaction, counting the keys.
func copyNode(b *bolt.Bucket, k []byte, keys *int) exportNode {
	*keys++
	n := exportNode{Key: bytes.Clone(k)}
	sub := b.Bucket(k)
	if sub == nil {
		n.Value = bytes.Clone(b.Get(k))
		return n
	}
	n.Bucket, n.Seq = true, sub.Sequence()
	c := sub.Cursor()
	for ck, _ := c.First(); ck != nil; ck, _ = c.Next() {
		n.Children = append(n.Children, copyNode(sub, ck, keys))
	}
	return n
}

// putNode writes n into b, which must not hold its key.
func putNode(b *bolt.Bucket, n exportNode, keys *int) error {
	*keys++
	if !n.Bucket {
		if n.Value == nil {
			n.Value = []byte{}
		}
		return b.Put(n.Key, n.Value)
	}
	sub, err := b.CreateBucket(n.Key)
	if err != nil {
		return fmt.Errorf("bucket %q: %w", n.Key, err)
	}
	if err := sub.SetSequence(n.Seq); err != nil {
		return err
	}
	for _, c := range n.Children {
		if err := putNode(sub, c, keys); err != nil {
			return err
		}
	}
	return nil
}

func clonePath(p [][]byte) [][]byte {
	out := make([][]byte, len(p))
	for i, s := range p {
		out[i] = bytes.Clone(s)
	}
	return out
}

// writeFileAtomic writes b to a new file at path: complete under a
// temporary name, fsynced, then renamed into place; an existing path is
// an error (an export never overwrites).
func writeFileAtomic(path string, b []byte) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s exists: %w", path, os.ErrExist)
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // harmless after the rename
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		defer d.Close()
		return d.Sync()
	}
	return nil
}
