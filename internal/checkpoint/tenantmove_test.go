package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// fillTenant commits every kind of progress of one stream per source of
// tenant (state with delays, window log, alert marks, delivered set, a
// sink's held set and mark).
func fillTenant(t *testing.T, d *DB, tenant string, seed int) {
	t.Helper()
	core := record.Stream{Tenant: tenant, Source: "dns", Account: "acme"}
	edge := record.Stream{Tenant: tenant, Source: "alerts", Account: "acme"}
	at := t0.Add(-time.Duration(seed) * time.Hour)
	late := make([]float64, len(cursor.DelayBounds)+1)
	late[0] = float64(seed)
	ids := []cursor.Delivered{cursor.DeliveredOf(fmt.Sprintf("id-%d", seed), at), cursor.DeliveredOf("same-id", at)}
	err := d.Apply(context.Background(), Changes{
		States: map[record.Stream]State{
			core: {Cursor: cursor.Cursor{Watermark: at, Delays: cursor.Delays{Late: late, Fresh: 3}}, Delivered: int64(seed), Updated: t0},
			edge: {Cursor: cursor.Cursor{Watermark: at}, Delivered: int64(seed + 1), Updated: t0},
		},
		Windows:   map[record.Stream]cursor.WindowChanges{core: {Put: []cursor.LoggedWindow{{Start: at.Add(-time.Minute), End: at, Count: int64(seed)}}}},
		Alerts:    map[record.Stream]cursor.AlertChanges{edge: {Put: map[string]cursor.AlertMark{"uuid-1": {Create: at, Update: at}}}},
		Delivered: map[record.Stream][]cursor.Delivered{core: ids, edge: ids[:1]},
		Marks:     map[string][]byte{"kafka": []byte(fmt.Sprintf("mark-%d", seed))},
		Held:      map[string]map[record.Stream][]cursor.Delivered{"kafka": {core: ids[1:]}},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// dump returns every key of the file at path, with its bucket path and
// sequence, as lines "bucket/sub/key = value" (values and keys quoted).
func dump(t *testing.T, path string) map[string]string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]string{}
	var walk func(prefix string, b *bolt.Bucket)
	walk = func(prefix string, b *bolt.Bucket) {
		out[prefix+" seq"] = fmt.Sprint(b.Sequence())
		_ = b.ForEach(func(k, v []byte) error {
			if v == nil {
				walk(fmt.Sprintf("%s/%q", prefix, k), b.Bucket(k))
				return nil
			}
			out[fmt.Sprintf("%s/%q", prefix, k)] = fmt.Sprintf("%q", v)
			return nil
		})
	}
	if err := db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error { walk(string(name), b); return nil })
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// of returns the lines of d whose key path holds tenant's prefix.
func of(d map[string]string, tenant string) map[string]string {
	out := map[string]string{}
	for k, v := range d {
		if strings.Contains(k, `"`+tenant+`/`) {
			out[k] = v
		}
	}
	return out
}

func without(d map[string]string, tenant string) map[string]string {
	out := map[string]string{}
	for k, v := range d {
		if !strings.Contains(k, `"`+tenant+`/`) {
			out[k] = v
		}
	}
	return out
}

func diff(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range want {
			if !yield(k) {
				return
			}
		}
	}) {
		if got[k] != want[k] {
			t.Errorf("%s: %s = %s, want %s", what, k, got[k], want[k])
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: %s = %s is extra", what, k, got[k])
		}
	}
}

// Issue 32: a tenant moves between shards with its progress: the export
// of alpha from a real checkpoint holding alpha, beta and the one-tenant
// form, imported into another shard's checkpoint holding gamma, gives
// that file alpha's keys byte for byte (values and sequences of every
// bucket: states, window logs, alert marks, delivered sets, delays, held
// sets) and changes nothing else; dropping alpha from the old file
// leaves beta and the one-tenant form byte for byte as they were.
func TestTenantMovesWithItsProgress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	oldPath, newPath, file := filepath.Join(dir, "old.db"), filepath.Join(dir, "new.db"), filepath.Join(dir, "alpha.json")
	old, err := Open(oldPath, WithClock(func() time.Time { return t0 }))
	if err != nil {
		t.Fatal(err)
	}
	fillTenant(t, old, "alpha", 2)
	fillTenant(t, old, "beta", 3)
	if err := old.Commit(ctx, record.Stream{Source: "dns", Account: "acme"}, State{Cursor: cursor.Cursor{Watermark: t0}, Updated: t0}); err != nil {
		t.Fatal(err)
	}
	moved, err := old.ExportTenant(ctx, "alpha", file)
	if err != nil {
		t.Fatal(err)
	}
	if moved.Streams != 2 {
		t.Errorf("exported %+v, want 2 streams", moved)
	}
	if _, err := old.ExportTenant(ctx, "alpha", file); !errors.Is(err, os.ErrExist) {
		t.Errorf("an export over an existing file: %v, want ErrExist", err)
	}
	if _, err := old.ExportTenant(ctx, "nobody", filepath.Join(dir, "nobody.json")); err == nil {
		t.Error("export of a tenant without progress: no error")
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	before := dump(t, oldPath)
	if len(of(before, "alpha")) < 10 {
		t.Fatalf("the old file holds only %d keys of alpha: %v", len(of(before, "alpha")), of(before, "alpha"))
	}
	for _, bucket := range []string{"states", "windows", "alerts", "delivered", "delays", "held"} {
		found := false
		for k := range of(before, "alpha") {
			found = found || strings.HasPrefix(k, bucket+"/")
		}
		if !found {
			t.Errorf("the test's alpha has nothing in bucket %s", bucket)
		}
	}

	nw, err := Open(newPath, WithClock(func() time.Time { return t0 }))
	if err != nil {
		t.Fatal(err)
	}
	fillTenant(t, nw, "gamma", 5)
	if err := nw.Close(); err != nil {
		t.Fatal(err)
	}
	target := dump(t, newPath)
	if nw, err = Open(newPath); err != nil {
		t.Fatal(err)
	}
	in, err := nw.ImportTenant(ctx, file, false)
	if err != nil {
		t.Fatal(err)
	}
	if in.Tenant != "alpha" || in.Streams != 2 || in.Keys != moved.Keys {
		t.Errorf("imported %+v, exported %+v", in, moved)
	}
	// A second import is refused: the file holds alpha now; --force
	// replaces it (with the same keys).
	if _, err := nw.ImportTenant(ctx, file, false); !errors.Is(err, ErrTenantHeld) {
		t.Errorf("a second import: %v, want ErrTenantHeld", err)
	}
	if _, err := nw.ImportTenant(ctx, file, true); err != nil {
		t.Errorf("an import with force: %v", err)
	}
	if err := nw.Close(); err != nil {
		t.Fatal(err)
	}
	after := dump(t, newPath)
	diff(t, "alpha in the new file", of(after, "alpha"), of(before, "alpha"))
	diff(t, "the rest of the new file", without(after, "alpha"), withSeqs(target, after))

	// The moved tenant reads as it did.
	if nw, err = Open(newPath); err != nil {
		t.Fatal(err)
	}
	all, err := nw.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s := all[record.Stream{Tenant: "alpha", Source: "dns", Account: "acme"}]; s.Delivered != 2 || s.Delays.Fresh != 3 {
		t.Errorf("alpha's state in the new file: %+v", s)
	}
	nw.Close()

	if old, err = Open(oldPath); err != nil {
		t.Fatal(err)
	}
	dropped, err := old.DropTenant(ctx, "alpha")
	if err != nil || dropped.Keys != moved.Keys {
		t.Errorf("dropped %+v, %v; exported %+v", dropped, err, moved)
	}
	old.Close()
	gone := dump(t, oldPath)
	if n := len(of(gone, "alpha")); n != 0 {
		t.Errorf("%d keys of alpha left after the drop", n)
	}
	diff(t, "the old file but alpha", gone, withSeqs(without(before, "alpha"), gone))
}

// withSeqs is want with the sequences of the top-level buckets taken
// from got: bbolt counts a bucket's sequence only where a package uses
// it, in the streams' sub-buckets, which are compared.
func withSeqs(want, got map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range want {
		out[k] = v
	}
	for k, v := range got {
		if strings.HasSuffix(k, " seq") && !strings.Contains(k, "/") {
			out[k] = v
		}
	}
	return out
}

// An import refuses a file of another checkpoint version, and what is no
// export.
func TestImportRefusesAnotherVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, path := openTemp(t)
	_ = path
	fillTenant(t, d, "alpha", 1)
	file := filepath.Join(t.TempDir(), "alpha.json")
	if _, err := d.ExportTenant(ctx, "alpha", file); err != nil {
		t.Fatal(err)
	}
	if _, err := d.DropTenant(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other.json")
	if err := os.WriteFile(other, bytes.Replace(raw, []byte(`"state_version":3`), []byte(`"state_version":99`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ImportTenant(ctx, other, true); !errors.Is(err, ErrUnknownVersion) {
		t.Errorf("an export of another version: %v, want ErrUnknownVersion", err)
	}
	if err := os.WriteFile(other, []byte(`{"hello":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ImportTenant(ctx, other, true); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a file that is no export: %v, want ErrCorrupt", err)
	}
	if _, err := d.ImportTenant(ctx, file, false); err != nil {
		t.Errorf("the export itself: %v", err)
	}
}

// Every bucket of a file that every kind of value was committed to is
// either one that holds tenants' progress (tenantBuckets) or a shared one
// (sharedBuckets): a bucket added to the checkpoint and to neither would
// be left behind when a tenant moves.
func TestEveryBucketIsATenantsOrShared(t *testing.T) {
	t.Parallel()
	d, path := openTemp(t)
	fillTenant(t, d, "alpha", 1)
	d.Close()
	known := sharedBuckets()
	for _, tb := range tenantBuckets() {
		known = append(known, tb.name)
	}
	for k := range dump(t, path) {
		name, _, _ := strings.Cut(strings.TrimSuffix(k, " seq"), "/")
		if !slices.ContainsFunc(known, func(b []byte) bool { return string(b) == name }) {
			t.Errorf("bucket %q is neither a tenant's nor shared", name)
		}
	}
}
