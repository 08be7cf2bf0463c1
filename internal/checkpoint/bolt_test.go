package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
	"go.uber.org/goleak"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/window"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var t0 = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)

func openTemp(t testing.TB, opts ...Option) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state", "checkpoint.db")
	d, err := Open(path, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d, path
}

func sampleState() State {
	return State{Cursor: cursor.Cursor{Watermark: t0, InFlight: &cursor.Chain{
		Window:  window.Window{Start: t0, End: t0.Add(24 * time.Hour)},
		NextURL: "https://api.example.test/api/v2/next?token=opaque%2Fabc",
		Started: t0.Add(24*time.Hour + 31*time.Minute),
		Pages:   7,
		Rows:    35_000,
		Total:   147_579,
	}, Density: 10_417.5}, Delivered: 1_234_567, Updated: t0.Add(25 * time.Hour)}
}

func statesEqual(t *testing.T, got, want State) {
	t.Helper()
	if !got.Watermark.Equal(want.Watermark) || !got.Updated.Equal(want.Updated) ||
		got.Delivered != want.Delivered || got.Density != want.Density {
		t.Fatalf("state = %+v, want %+v", got, want)
	}
	switch {
	case got.InFlight == nil && want.InFlight == nil:
	case got.InFlight == nil || want.InFlight == nil:
		t.Fatalf("in flight = %+v, want %+v", got.InFlight, want.InFlight)
	default:
		g, w := *got.InFlight, *want.InFlight
		if !g.Window.Start.Equal(w.Window.Start) || !g.Window.End.Equal(w.Window.End) || !g.Started.Equal(w.Started) ||
			g.NextURL != w.NextURL || g.Pages != w.Pages || g.Rows != w.Rows || g.Total != w.Total {
			t.Fatalf("in flight = %+v, want %+v", g, w)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := openTemp(t)
	k := record.Stream{Source: "dns", Account: "acme"}

	if _, ok, err := d.Load(ctx, k); err != nil || ok {
		t.Fatalf("Load of a new key = ok %v, err %v; want not found", ok, err)
	}
	want := sampleState()
	if err := d.Commit(ctx, k, want); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	got, ok, err := d.Load(ctx, k)
	if err != nil || !ok {
		t.Fatalf("Load = ok %v, err %v", ok, err)
	}
	statesEqual(t, got, want)

	// A state without a window in flight and an account-less key.
	k2 := record.Stream{Source: "audit_logs"}
	want2 := State{Cursor: cursor.Cursor{Watermark: t0.Add(time.Hour)}, Updated: t0}
	if err := d.Commit(ctx, k2, want2); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	got2, ok, err := d.Load(ctx, k2)
	if err != nil || !ok {
		t.Fatalf("Load = ok %v, err %v", ok, err)
	}
	statesEqual(t, got2, want2)
}

func TestCommitSetsUpdatedOnlyWhenZero(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := t0.Add(99 * time.Hour)
	d, _ := openTemp(t, WithClock(func() time.Time { return clock }))
	k := record.Stream{Source: "dns", Account: "acme"}

	if err := d.Commit(ctx, k, State{Cursor: cursor.Cursor{Watermark: t0}}); err != nil {
		t.Fatal(err)
	}
	got, _, _ := d.Load(ctx, k)
	if !got.Updated.Equal(clock) {
		t.Fatalf("Updated = %v, want the store's clock %v", got.Updated, clock)
	}
	if err := d.Commit(ctx, k, State{Cursor: cursor.Cursor{Watermark: t0}, Updated: t0}); err != nil {
		t.Fatal(err)
	}
	got, _, _ = d.Load(ctx, k)
	if !got.Updated.Equal(t0) {
		t.Fatalf("Updated = %v, want the caller's %v", got.Updated, t0)
	}
}

func TestCommitStoresABadDensityAsUnknown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := openTemp(t)
	k := record.Stream{Source: "dns", Account: "acme"}
	for _, density := range []float64{-1, math.Inf(1), math.NaN()} {
		if err := d.Commit(ctx, k, State{Cursor: cursor.Cursor{Watermark: t0, Density: density}}); err != nil {
			t.Fatalf("Commit with density %v: %v", density, err)
		}
		got, _, err := d.Load(ctx, k)
		if err != nil || got.Density != 0 {
			t.Fatalf("density %v stored as %v (err %v), want 0", density, got.Density, err)
		}
	}
}

func TestReopenAfterCloseKeepsData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cp.db")
	d, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[record.Stream]State{
		{Source: "dns", Account: "acme"}:         sampleState(),
		{Source: "connections", Account: "acme"}: {Cursor: cursor.Cursor{Watermark: t0}, Delivered: 3, Updated: t0},
		{Source: "audit_logs", Account: "org"}:   {Cursor: cursor.Cursor{Watermark: t0.Add(time.Minute)}, Updated: t0},
	}
	if err := d.CommitMany(ctx, want); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	d2, err := Open(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer d2.Close()
	got, err := d2.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("All = %d states, want %d", len(got), len(want))
	}
	for k, w := range want {
		statesEqual(t, got[k], w)
	}
}

func TestFileModeIs0600AndDirectoryIs0700(t *testing.T) {
	t.Parallel()
	_, path := openTemp(t)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Fatalf("file mode = %o, want 600", m)
	}
	di, err := os.Stat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if m := di.Mode().Perm(); m != 0o700 {
		t.Fatalf("directory mode = %o, want 700", m)
	}
}

func TestAnExistingWiderFileModeIsNarrowedTo0600(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cp.db")
	d, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	fi, _ := os.Stat(path)
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Fatalf("file mode = %o, want 600", m)
	}
}

func TestASecondOpenOfALockedFileFailsFastWithAClearError(t *testing.T) {
	t.Parallel()
	d, path := openTemp(t)

	start := time.Now()
	d2, err := Open(path) // default timeout, 1s
	elapsed := time.Since(start)
	if err == nil {
		d2.Close()
		t.Fatal("second Open succeeded, want a lock error")
	}
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("error %v does not wrap ErrLocked", err)
	}
	if want := "checkpoint file " + path + " is locked by another process"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
	if elapsed > 5*time.Second {
		t.Fatalf("second Open took %v, want about the 1s default", elapsed)
	}

	// Once the first closes, the file opens again.
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d3, err := Open(path, WithOpenTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	d3.Close()
}

func TestABrokenFileIsAClearErrorAndIsLeftAlone(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		write func(t *testing.T, path string)
		want  error
		says  string
	}{
		{
			// Never a bbolt file: a configuration error, not damage.
			name: "garbage bytes",
			write: func(t *testing.T, path string) {
				writeFile(t, path, bytes.Repeat([]byte("not a bbolt file\n"), 1000))
			},
			want: ErrNotCheckpoint,
			says: "is not a checkpoint: it is not a bbolt file",
		},
		{
			name: "a few garbage bytes",
			write: func(t *testing.T, path string) {
				writeFile(t, path, []byte("garbage"))
			},
			want: ErrNotCheckpoint,
		},
		{
			name: "damaged data pages",
			write: func(t *testing.T, path string) {
				validFile(t, path)
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				page := os.Getpagesize()
				for i := 2 * page; i < len(b); i++ {
					b[i] = byte(i*7 + 3)
				}
				writeFile(t, path, b)
			},
			want: ErrCorrupt,
		},
		{
			name: "another program's bbolt file",
			write: func(t *testing.T, path string) {
				rawBolt(t, path, func(tx *bolt.Tx) error {
					_, err := tx.CreateBucket([]byte("users"))
					return err
				})
			},
			want: ErrNotCheckpoint,
			says: "is not a collector checkpoint",
		},
		{
			name: "a newer schema version",
			write: func(t *testing.T, path string) {
				validFile(t, path)
				rawBolt(t, path, func(tx *bolt.Tx) error {
					return tx.Bucket(bucketMeta).Put(metaSchema, []byte("2"))
				})
			},
			want: ErrUnknownVersion,
			says: "has schema version 2",
		},
		{
			name: "a value with an unknown version",
			write: func(t *testing.T, path string) {
				validFile(t, path)
				rawBolt(t, path, func(tx *bolt.Tx) error {
					return tx.Bucket(bucketStates).Put(encodeKey(record.Stream{Source: "dns", Account: "acme"}), []byte(`{"v":7,"watermark":"2026-11-20T00:00:00Z"}`))
				})
			},
			want: ErrUnknownVersion,
			says: "key dns/acme: value has version 7",
		},
		{
			name: "an undecodable value",
			write: func(t *testing.T, path string) {
				validFile(t, path)
				rawBolt(t, path, func(tx *bolt.Tx) error {
					return tx.Bucket(bucketStates).Put(encodeKey(record.Stream{Source: "dns", Account: "acme"}), []byte{0xde, 0xad})
				})
			},
			want: ErrCorrupt,
			says: "key dns/acme: undecodable value",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cp.db")
			tc.write(t, path)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			d, err := Open(path, WithOpenTimeout(100*time.Millisecond))
			if err == nil {
				d.Close()
				t.Fatal("Open succeeded, want an error")
			}
			t.Logf("error: %v", err)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v does not wrap %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name the file", err)
			}
			if tc.says != "" && !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error %q does not say %q", err, tc.says)
			}
			// The refused file's lock was released: bbolt can open it.
			if db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 100 * time.Millisecond, ReadOnly: true}); errors.Is(err, berrors.ErrTimeout) {
				t.Fatal("the refused file is still locked")
			} else if err == nil {
				db.Close()
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Fatal("Open changed a file it refused")
			}
		})
	}
}

func TestDecodeStateRefusesWhatItCannotRead(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   string
		want error
	}{
		{"not JSON", "\x00\x01", ErrCorrupt},
		{"no version field", `{"watermark":"2026-11-20T00:00:00Z"}`, ErrCorrupt},
		{"version zero", `{"v":0}`, ErrUnknownVersion},
		{"a newer version", `{"v":4}`, ErrUnknownVersion},
		{"a field of version 3 in version 2", `{"v":2,"inventory":{"states":"AAAAAAAAAAE="}}`, ErrCorrupt},
		{"inventory states not whole digests", `{"v":3,"inventory":{"states":"AAAA"}}`, ErrCorrupt},
		{"inventory states out of order", `{"v":3,"inventory":{"states":"AAAAAAAAAAIAAAAAAAAAAQ=="}}`, ErrCorrupt},
		{"an unknown field", `{"v":1,"cursor":"x"}`, ErrCorrupt},
		{"an unknown field of version 2", `{"v":2,"cursor":"x"}`, ErrCorrupt},
		{"a field of version 2 in version 1", `{"v":1,"limits":{"chain_cap":5}}`, ErrCorrupt},
		{"a field of the wrong type", `{"v":1,"watermark":12}`, ErrCorrupt},
		{"trailing data", `{"v":1}{"v":1}`, ErrCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeState([]byte(tc.in))
			if !errors.Is(err, tc.want) {
				t.Fatalf("decodeState(%q) = %v, want %v", tc.in, err, tc.want)
			}
		})
	}
	if _, err := decodeState([]byte(`{"v":1}`)); err != nil {
		t.Fatalf("a minimal version 1 value: %v", err)
	}
}

func TestReset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := map[record.Stream]State{
		{Source: "dns", Account: "acme"}:         {Cursor: cursor.Cursor{Watermark: t0}},
		{Source: "dns", Account: "globex"}:       {Cursor: cursor.Cursor{Watermark: t0}},
		{Source: "dns", Account: ""}:             {Cursor: cursor.Cursor{Watermark: t0}},
		{Source: "dnsx", Account: "acme"}:        {Cursor: cursor.Cursor{Watermark: t0}}, // shares a prefix with "dns"
		{Source: "connections", Account: "acme"}: {Cursor: cursor.Cursor{Watermark: t0}},
	}
	cases := []struct {
		name            string
		source, account string
		wantN           int
		wantLeft        []record.Stream
	}{
		{"reset of one account removes only that account", "dns", "acme", 1,
			[]record.Stream{{Source: "dns", Account: "globex"}, {Source: "dns", Account: ""}, {Source: "dnsx", Account: "acme"}, {Source: "connections", Account: "acme"}}},
		{"reset of a whole source removes every account of it and nothing else", "dns", "", 3,
			[]record.Stream{{Source: "dnsx", Account: "acme"}, {Source: "connections", Account: "acme"}}},
		{"reset of an unknown account removes nothing", "dns", "initech", 0,
			[]record.Stream{{Source: "dns", Account: "acme"}, {Source: "dns", Account: "globex"}, {Source: "dns", Account: ""}, {Source: "dnsx", Account: "acme"}, {Source: "connections", Account: "acme"}}},
		{"reset of an unknown source removes nothing", "user_logins", "", 0,
			[]record.Stream{{Source: "dns", Account: "acme"}, {Source: "dns", Account: "globex"}, {Source: "dns", Account: ""}, {Source: "dnsx", Account: "acme"}, {Source: "connections", Account: "acme"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := openTemp(t)
			if err := d.CommitMany(ctx, seed); err != nil {
				t.Fatal(err)
			}
			n, err := d.Reset(ctx, "", tc.source, tc.account)
			if err != nil || n != tc.wantN {
				t.Fatalf("Reset = %d, %v; want %d", n, err, tc.wantN)
			}
			all, err := d.All(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != len(tc.wantLeft) {
				t.Fatalf("left %d states (%v), want %v", len(all), all, tc.wantLeft)
			}
			for _, k := range tc.wantLeft {
				if _, ok := all[k]; !ok {
					t.Fatalf("%s was removed", k)
				}
			}
		})
	}

	d, _ := openTemp(t)
	if _, err := d.Reset(ctx, "", "", ""); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("Reset of an empty source = %v, want ErrInvalidKey", err)
	}
}

func TestCommitManyStoresAllOrNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := openTemp(t)
	bad := map[record.Stream]State{
		{Source: "dns", Account: "acme"}: {Cursor: cursor.Cursor{Watermark: t0}},
		{Source: "", Account: "acme"}:    {Cursor: cursor.Cursor{Watermark: t0}},
	}
	if err := d.CommitMany(ctx, bad); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("CommitMany with an empty source = %v, want ErrInvalidKey", err)
	}
	if all, _ := d.All(ctx); len(all) != 0 {
		t.Fatalf("a refused CommitMany stored %v", all)
	}
	if err := d.CommitMany(ctx, nil); err != nil {
		t.Fatalf("CommitMany(nil) = %v", err)
	}
}

func TestInvalidKeysAreRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := openTemp(t)
	for _, k := range []record.Stream{{Source: "", Account: "acme"}, {Source: "d\x00ns", Account: "acme"}} {
		if err := d.Commit(ctx, k, State{}); !errors.Is(err, ErrInvalidKey) {
			t.Fatalf("Commit(%q) = %v, want ErrInvalidKey", k, err)
		}
		if _, _, err := d.Load(ctx, k); !errors.Is(err, ErrInvalidKey) {
			t.Fatalf("Load(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
	// A NUL byte in the account is fine: the first NUL splits the key.
	k := record.Stream{Source: "dns", Account: "a\x00b"}
	if err := d.Commit(ctx, k, State{Cursor: cursor.Cursor{Watermark: t0}}); err != nil {
		t.Fatal(err)
	}
	all, err := d.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := all[k]; !ok {
		t.Fatalf("All = %v, want %q", all, k)
	}
}

func TestAClosedStoreAndACanceledContextAreErrors(t *testing.T) {
	t.Parallel()
	d, _ := openTemp(t)
	k := record.Stream{Source: "dns", Account: "acme"}

	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.Commit(canceled, k, State{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Commit with a canceled context = %v", err)
	}

	ctx := context.Background()
	d.Close()
	if err := d.Commit(ctx, k, State{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Commit after Close = %v, want ErrClosed", err)
	}
	if _, _, err := d.Load(ctx, k); !errors.Is(err, ErrClosed) {
		t.Fatalf("Load after Close = %v, want ErrClosed", err)
	}
	if _, err := d.All(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("All after Close = %v, want ErrClosed", err)
	}
	if _, err := d.Reset(ctx, "", "dns", ""); !errors.Is(err, ErrClosed) {
		t.Fatalf("Reset after Close = %v, want ErrClosed", err)
	}
}

func TestConcurrentCommitsAreSafe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := openTemp(t)
	const workers, commits = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*commits*3)
	for w := range workers {
		wg.Go(func() {
			own := record.Stream{Source: "dns", Account: fmt.Sprintf("acct-%d", w)}
			for i := range commits {
				s := State{Cursor: cursor.Cursor{Watermark: t0.Add(time.Duration(i+1) * time.Hour)}, Delivered: int64(i + 1)}
				if err := d.Commit(ctx, own, s); err != nil {
					errs <- err
				}
				if err := d.CommitMany(ctx, map[record.Stream]State{
					{Source: "shared", Account: "x"}:              s,
					{Source: "connections", Account: own.Account}: s,
				}); err != nil {
					errs <- err
				}
				if _, _, err := d.Load(ctx, own); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	all, err := d.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2*workers+1 {
		t.Fatalf("All = %d states, want %d", len(all), 2*workers+1)
	}
	for w := range workers {
		s := all[record.Stream{Source: "dns", Account: fmt.Sprintf("acct-%d", w)}]
		if s.Delivered != commits {
			t.Fatalf("worker %d: Delivered = %d, want the last commit's %d", w, s.Delivered, commits)
		}
	}
}

// BenchmarkCommit measures one Commit: one bbolt write transaction with
// fsync, so ns/op is mostly the disk's sync latency.
func BenchmarkCommit(b *testing.B) {
	ctx := context.Background()
	d, _ := openTemp(b)
	k := record.Stream{Source: "dns", Account: "acme"}
	s := sampleState()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.Delivered = int64(i)
		if err := d.Commit(ctx, k, s); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}

// BenchmarkCommitMany64 measures one transaction of 64 states (one fsync),
// the pipeline's batched commit.
func BenchmarkCommitMany64(b *testing.B) {
	ctx := context.Background()
	d, _ := openTemp(b)
	m := make(map[record.Stream]State, 64)
	for i := range 64 {
		m[record.Stream{Source: "dns", Account: fmt.Sprintf("acct-%02d", i)}] = sampleState()
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := d.CommitMany(ctx, m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*64)/b.Elapsed().Seconds(), "states/s")
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// validFile creates a checkpoint file with a few states.
func validFile(t *testing.T, path string) {
	t.Helper()
	d, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	m := map[record.Stream]State{}
	for i := range 50 {
		m[record.Stream{Source: "dns", Account: fmt.Sprintf("acct-%02d", i)}] = sampleState()
	}
	if err := d.CommitMany(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}

// rawBolt changes a file behind the checkpoint's back.
func rawBolt(t *testing.T, path string, fn func(*bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}
