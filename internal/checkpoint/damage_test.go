package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
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

// history is a real checkpoint file and what each of its transactions
// stored.
type history struct {
	file     []byte
	pageSize int
	last     uint64                             // the last transaction
	byTx     map[uint64]map[record.Stream]State // every state as of each transaction
}

// makeCheckpoint makes a checkpoint with Open and four CommitMany of 60
// states each, and returns it.
func makeCheckpoint(t testing.TB) history {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cp.db")
	d, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	h := history{byTx: map[uint64]map[record.Stream]State{}}
	all := map[record.Stream]State{}
	for round := range 4 {
		m := map[record.Stream]State{}
		for i := range 60 {
			s := sampleState()
			s.Watermark = t0.Add(time.Duration(round) * 24 * time.Hour)
			s.Delivered = int64(1000*round + i)
			m[record.Stream{Source: "dns", Account: fmt.Sprintf("acct-%02d", i)}] = s
		}
		m[record.Stream{Source: "audit_logs", Account: fmt.Sprintf("org-%d", round)}] = State{Cursor: cursor.Cursor{Watermark: t0}, Updated: t0}
		if err := d.CommitMany(ctx, m); err != nil {
			t.Fatal(err)
		}
		maps.Copy(all, m)
		if err := d.bdb.View(func(tx *bolt.Tx) error {
			h.last = uint64(tx.ID())
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		h.byTx[h.last] = maps.Clone(all)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if h.file, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	l := layoutOf(t, h.file)
	if l.current() < 0 || l.meta[l.current()].txid != h.last {
		t.Fatalf("the new file's current meta is %+v, want transaction %d", l.meta, h.last)
	}
	h.pageSize = l.pageSize
	return h
}

// writeCopy writes b as cp.db in a directory of its own.
func writeCopy(t testing.TB, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cp.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// rewriteMeta changes meta page index of b with fn and sets a correct
// checksum, as a bbolt of another format would write it.
func rewriteMeta(b []byte, pageSize, index int, fn func(meta []byte)) {
	p := b[index*pageSize:]
	fn(p[pageHeaderSize:metaChecksumAt])
	ne.PutUint64(p[metaChecksumAt:], metaSum(p))
}

func dirNames(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func readAll(t testing.TB, d *DB) map[record.Stream]State {
	t.Helper()
	all, err := d.All(context.Background())
	if err != nil {
		t.Fatalf("All: %v", err)
	}
	return all
}

func sameStates(t *testing.T, got, want map[record.Stream]State) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d states, want %d", len(got), len(want))
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Fatalf("state %s is missing", k)
		}
		statesEqual(t, g, w)
	}
}

func TestADamagedCheckpointIsAClearErrorNeverACrash(t *testing.T) {
	t.Parallel()
	h := makeCheckpoint(t)
	size, ps := len(h.file), h.pageSize
	l := layoutOf(t, h.file)
	// The lengths below must cut into pages the last transaction uses.
	if used := int(l.meta[l.current()].hwm) * ps; used <= 36_864 || used <= size/2 {
		t.Fatalf("the test checkpoint uses %d of its %d bytes; the truncations below need more", used, size)
	}
	truncated := func(n int) func([]byte) []byte {
		return func(b []byte) []byte { return b[:n] }
	}
	zeroPage := func(i int) func([]byte) []byte {
		return func(b []byte) []byte { clear(b[i*ps : (i+1)*ps]); return b }
	}
	flip := func(off int) func([]byte) []byte {
		return func(b []byte) []byte { b[off] ^= 0x20; return b }
	}
	then := func(fs ...func([]byte) []byte) func([]byte) []byte {
		return func(b []byte) []byte {
			for _, f := range fs {
				b = f(b)
			}
			return b
		}
	}
	cases := []struct {
		name   string
		damage func([]byte) []byte
		want   error
		says   string
	}{
		{"a file truncated to 1 byte is corrupt", truncated(1), ErrCorrupt, "is truncated to 1 byte(s)"},
		{"a file truncated to 100 bytes is corrupt", truncated(100), ErrCorrupt, "is truncated"},
		{"a file truncated to 4095 bytes is corrupt", truncated(4095), ErrCorrupt, "is truncated"},
		{"a file truncated to 4096 bytes is corrupt", truncated(4096), ErrCorrupt, "is truncated"},
		{"a file truncated to 8192 bytes is corrupt", truncated(8192), ErrCorrupt, "is truncated"},
		{"a file truncated to 12288 bytes is corrupt", truncated(12288), ErrCorrupt, "is truncated"},
		{"a file truncated to 36864 bytes is corrupt", truncated(36864), ErrCorrupt, "is truncated"},
		{"a file truncated to half its size is corrupt", truncated(size / 2), ErrCorrupt, "is truncated"},
		{"a file one byte short is corrupt", truncated(size - 1), ErrCorrupt, "is truncated"},
		{"an empty file is corrupt, not a new checkpoint", truncated(0), ErrCorrupt,
			"is empty (0 bytes): it was damaged, or created by a crash before its first write"},
		{"a file with both meta pages zeroed is corrupt", then(zeroPage(0), zeroPage(1)), ErrCorrupt, "zeroed where its meta pages belong"},
		{"a file with a byte flipped in both meta pages is corrupt", then(flip(16+40), flip(ps+16+40)), ErrCorrupt,
			"both meta pages are unusable (meta page 0: checksum mismatch; meta page 1: checksum mismatch)"},
		{"a file of zeros is corrupt", func(b []byte) []byte { return make([]byte, len(b)) }, ErrCorrupt, "zeroed"},
		{"a zeroed first meta page over damaged data pages is corrupt, and the file is not repaired", func(b []byte) []byte {
			clear(b[:ps])
			for i := 2 * ps; i < len(b); i++ {
				b[i] = byte(i*7 + 3)
			}
			return b
		}, ErrCorrupt, "is damaged beyond its meta pages (meta page 0: zeroed)"},
		{"a zeroed first meta page over a damaged leaf is corrupt, and the file is not repaired", func(b []byte) []byte {
			clear(b[:ps])
			// Keys out of order on the first leaf: only bbolt's check,
			// which runs on the repaired copy, sees it.
			leaf := firstLeaf(t, b, ps)
			e := leaf + pageHeaderSize
			ne.PutUint32(b[e+4:], ne.Uint32(b[e+4:])+1)
			return b
		}, ErrCorrupt, "is damaged beyond its meta pages (meta page 0: zeroed)"},
		{"a zeroed first meta page over a truncated file is corrupt", then(zeroPage(0), truncated(36864)), ErrCorrupt, "is truncated"},
		{"a file of a newer bbolt format is an unknown version", func(b []byte) []byte {
			for i := range 2 {
				rewriteMeta(b, ps, i, func(m []byte) { ne.PutUint32(m[4:], 3) })
			}
			return b
		}, ErrUnknownVersion, "was written in bbolt format version 3"},
		{"a text file is not a checkpoint", func([]byte) []byte {
			return []byte("this is a text file, not a checkpoint\n")
		}, ErrNotCheckpoint, "is not a checkpoint: it is not a bbolt file (38 bytes; its content is not shown)"},
		{"a YAML file is not a checkpoint", func([]byte) []byte {
			return bytes.Repeat([]byte("checkpoint:\n  path: /var/lib/collector/checkpoint.db\n"), 200)
		}, ErrNotCheckpoint, "is not a checkpoint: it is not a bbolt file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			damaged := tc.damage(bytes.Clone(h.file))
			path := writeCopy(t, damaged)

			d, err := Open(path, WithOpenTimeout(100*time.Millisecond))
			if err == nil {
				d.Close()
				t.Fatal("Open succeeded, want an error")
			}
			t.Logf("error: %v", err)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error does not wrap %v", tc.want)
			}
			for _, other := range []error{ErrCorrupt, ErrNotCheckpoint, ErrUnknownVersion} {
				if other != tc.want && errors.Is(err, other) {
					t.Fatalf("error wraps %v as well as %v", other, tc.want)
				}
			}
			hint := map[error]string{
				ErrCorrupt:        "move it aside to start over from sources.*.start, or restore a backup",
				ErrNotCheckpoint:  "set checkpoint.path",
				ErrUnknownVersion: "run the collector version that wrote it",
			}[tc.want]
			for _, s := range []string{path, tc.says, hint} {
				if !strings.Contains(err.Error(), s) {
					t.Fatalf("error does not say %q", s)
				}
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(after, damaged) {
				t.Fatal("Open changed a file it refused")
			}
			if names := dirNames(t, filepath.Dir(path)); !slices.Equal(names, []string{"cp.db"}) {
				t.Fatalf("the directory holds %q, want only cp.db (no backup, no temporary file)", names)
			}
		})
	}
}

func TestADamagedMetaPageIsSurvivedAndSaid(t *testing.T) {
	t.Parallel()
	h := makeCheckpoint(t)
	ps := h.pageSize
	// bbolt writes transaction N to meta page N%2: meta page 0 holds the
	// last commit, meta page 1 the one before.
	if h.last%2 != 0 {
		t.Fatalf("the last transaction %d is not in meta page 0; this test needs it there", h.last)
	}
	last, previous := h.last, h.last-1
	zero := func(p int) func([]byte) {
		return func(b []byte) { clear(b[p*ps : (p+1)*ps]) }
	}
	cases := []struct {
		name     string
		damage   func([]byte)
		tx       uint64   // the transaction the file opens at
		repaired bool     // Open rewrote meta pages and saved a copy
		says     []string // in Recovered
	}{
		{"a zeroed first meta page is rewritten from the second, losing the last commit", zero(0), previous, true, []string{
			"(meta page 0: zeroed); opened from meta page 1 (transaction " + fmt.Sprint(previous) + ")",
			"at worst its last commit was lost",
			"meta page 0 was rewritten from meta page 1",
		}},
		{"a zeroed second meta page is rewritten from the first, losing nothing", zero(1), last, true, []string{
			"(meta page 1: zeroed); opened from meta page 0 (transaction " + fmt.Sprint(last) + ")",
			"meta page 1 was rewritten from meta page 0",
		}},
		{"a first meta page with a flipped byte is left for bbolt to rewrite", func(b []byte) {
			b[pageHeaderSize+40] ^= 0x01 // in the freelist page id
		}, previous, false, []string{
			"(meta page 0: checksum mismatch); opened from meta page 1 (transaction " + fmt.Sprint(previous) + ")",
			"bbolt rewrites meta page 0 at the next commit",
		}},
		{"a second meta page with a flipped byte is left for bbolt to rewrite", func(b []byte) {
			b[ps+pageHeaderSize+40] ^= 0x01
		}, last, false, []string{
			"(meta page 1: checksum mismatch); opened from meta page 0 (transaction " + fmt.Sprint(last) + ")",
			"bbolt rewrites meta page 1 at the next commit",
		}},
		{"a first meta page with a flipped byte in its page header gets its header rewritten", func(b []byte) {
			b[8] ^= 0x01 // in the page flags; the meta itself is intact
		}, last, true, []string{
			"(meta page 0: page header damaged (id 0, flags 0x5)); opened from meta page 0 (transaction " + fmt.Sprint(last) + "): nothing was lost",
			"the header of meta page 0 was rewritten",
		}},
		{"a first meta page overwritten with text is rewritten from the second", func(b []byte) {
			copy(b, "checkpoint:\n  path: /oops\n")
		}, previous, true, []string{
			"(meta page 0: overwritten (no bbolt magic number)); opened from meta page 1",
			"meta page 0 was rewritten from meta page 1",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			damaged := bytes.Clone(h.file)
			tc.damage(damaged)
			path := writeCopy(t, damaged)

			d, err := Open(path, WithClock(func() time.Time { return t0 }))
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			rec := d.Recovered()
			t.Logf("recovered: %s", rec)
			for _, s := range append([]string{"checkpoint file " + path + " was damaged"}, tc.says...) {
				if !strings.Contains(rec, s) {
					t.Fatalf("Recovered() does not say %q", s)
				}
			}
			sameStates(t, readAll(t, d), h.byTx[tc.tx])

			backup := path + ".damaged-20261120T000000Z"
			if tc.repaired {
				if want := "the damaged file was saved as " + backup; !strings.Contains(rec, want) {
					t.Fatalf("Recovered() does not say %q", want)
				}
				saved, err := os.ReadFile(backup)
				if err != nil {
					t.Fatalf("no copy of the damaged file: %v", err)
				}
				if !bytes.Equal(saved, damaged) {
					t.Fatal("the saved copy is not the damaged file")
				}
				now, _ := os.ReadFile(path)
				if l := layoutOf(t, now); !l.whole() {
					t.Fatalf("after the repair the meta pages are still damaged: %+v", l.meta)
				}
				if !bytes.Equal(now[2*ps:], damaged[2*ps:]) {
					t.Fatal("the repair changed pages other than the meta pages")
				}
				if names := dirNames(t, filepath.Dir(path)); !slices.Equal(names, []string{"cp.db", filepath.Base(backup)}) {
					t.Fatalf("the directory holds %q, want cp.db and the saved copy", names)
				}
			} else if names := dirNames(t, filepath.Dir(path)); !slices.Equal(names, []string{"cp.db"}) {
				t.Fatalf("the directory holds %q, want only cp.db", names)
			}

			// After one commit both meta pages are whole, and the file
			// opens without a word.
			k := record.Stream{Source: "dns", Account: "after-recovery"}
			if err := d.Commit(ctx, k, State{Cursor: cursor.Cursor{Watermark: t0}, Updated: t0}); err != nil {
				t.Fatal(err)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			now, _ := os.ReadFile(path)
			if l := layoutOf(t, now); !l.whole() {
				t.Fatalf("after a commit the meta pages are still damaged: %+v", l.meta)
			}
			d, err = Open(path)
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			defer d.Close()
			if rec := d.Recovered(); rec != "" {
				t.Fatalf("Recovered() after reopening = %q, want empty", rec)
			}
			want := maps.Clone(h.byTx[tc.tx])
			want[k] = State{Cursor: cursor.Cursor{Watermark: t0}, Updated: t0}
			sameStates(t, readAll(t, d), want)
		})
	}
}

func TestAValidCheckpointOpensAndReadsBackEveryState(t *testing.T) {
	t.Parallel()
	h := makeCheckpoint(t)
	path := writeCopy(t, h.file)
	d, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if rec := d.Recovered(); rec != "" {
		t.Fatalf("Recovered() = %q for a sound file", rec)
	}
	sameStates(t, readAll(t, d), h.byTx[h.last])
}

func TestAPathThatIsADirectoryIsNotACheckpoint(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cp.db")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path)
	if !errors.Is(err, ErrNotCheckpoint) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open of a directory = %v, want ErrNotCheckpoint only", err)
	}
	if want := "checkpoint path " + path + " is a directory, not a checkpoint file"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
}

// A new checkpoint is complete and leaves nothing but itself behind
// (boltfile's tests hold the details: leftovers, locks).
func TestANewCheckpointIsCompleteAndAlone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".cp.db.new-123456"), []byte("half made")) // a crash's leftover
	path := filepath.Join(dir, "cp.db")
	d, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if rec := d.Recovered(); rec != "" {
		t.Fatalf("Recovered() = %q for a new file", rec)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"cp.db"}) {
		t.Fatalf("the directory holds %q, want only cp.db", names)
	}
	// The new file passes every check Open makes of an existing file.
	d, err = Open(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer d.Close()
	if rec := d.Recovered(); rec != "" {
		t.Fatalf("Recovered() = %q after reopening a new file", rec)
	}
}

// firstLeaf returns the offset of the leftmost leaf page of the states
// bucket, found by following first elements from the root.
func firstLeaf(t testing.TB, b []byte, ps int) int {
	t.Helper()
	l := layoutAt(t, b, ps)
	c := l.current()
	if c < 0 {
		t.Fatal("no intact meta page")
	}
	// The root bucket's leaf holds the buckets meta and states.
	root := int(l.meta[c].root) * ps
	for i := range int(ne.Uint16(b[root+10:])) {
		e := root + pageHeaderSize + i*elementSize
		pos, ksize := int(ne.Uint32(b[e+4:])), int(ne.Uint32(b[e+8:]))
		if string(b[e+pos:e+pos+ksize]) != "states" {
			continue
		}
		p := int(ne.Uint64(b[e+pos+ksize:])) * ps
		for ne.Uint16(b[p+8:]) == flagBranch {
			e := p + pageHeaderSize
			p = int(ne.Uint64(b[e+8:])) * ps
		}
		return p
	}
	t.Fatal("no states bucket")
	return 0
}

// Flipped bits in a value of a delivered set, in a real checkpoint file
// (bbolt checksums no value; issue 29: 247 of 300 such copies opened
// without a word, and the records of the value were taken for others,
// their per-minute counts changed). In each of 300 copies, 1 to 4 bits of
// one value (an hour of 40 records) are flipped: the file opens, the
// damaged value is logged once and counted, and reads as empty: each of
// its records counts as not delivered (it is delivered again when its
// period is asked again: a copy, never a loss), its minutes count 0, and
// the values around it read as they were; collector check counts it.
func TestADamagedDeliveredValueIsSaidAndItsRecordsCountAsNotDelivered(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(29, 10))
	k := record.Stream{Source: "dns", Account: "acme"}
	keys := hourKeys(rng, 3, 40)
	file := appliedFile(t, Changes{States: map[record.Stream]State{k: {Cursor: cursor.Cursor{Watermark: t0}}},
		Delivered: map[record.Stream][]cursor.Delivered{k: keys}})
	// The value of the middle hour, found in the file by its bytes.
	mid := t0.Add(time.Hour)
	inMid := func(e cursor.Delivered) bool {
		return e.Time >= mid.UnixMilli() && e.Time < mid.Add(time.Hour).UnixMilli()
	}
	var midKeys []cursor.Delivered
	for _, e := range keys {
		if inMid(e) {
			midKeys = append(midKeys, e)
		}
	}
	slices.SortFunc(midKeys, compareDelivered)
	val := encodeSpan(mid.UnixMilli(), midKeys)
	at := bytes.Index(file, val)
	if at < 0 || bytes.LastIndex(file, val) != at {
		t.Fatalf("the middle hour's value is not in the file once (at %d)", at)
	}
	wantMinutes := make([]int64, 3*60)
	for _, e := range keys {
		if !inMid(e) {
			wantMinutes[(e.Time-t0.UnixMilli())/minuteMillis]++
		}
	}
	wantEnd := time.UnixMilli(slices.MaxFunc(keys, compareDelivered).Time + 1)
	for c := range 300 {
		b := bytes.Clone(file)
		bits := map[int]bool{}
		for len(bits) < 1+c%4 {
			bits[rng.IntN(len(val)*8)] = true
		}
		for bit := range bits {
			b[at+bit/8] ^= 1 << (bit % 8)
		}
		p := writeCopy(t, b)
		// collector check says so too.
		if in, err := Inspect(p, 0); err != nil || in.DamagedValues != 1 || !strings.Contains(in.String(), "1 damaged values in the delivered or held sets") {
			t.Fatalf("copy %d: Inspect: %q, %d damaged (%v); want 1", c, in, in.DamagedValues, err)
		}
		var logs bytes.Buffer
		db, err := Open(p, WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
		if err != nil {
			t.Fatalf("copy %d (bits %v): a damaged delivered-set value stopped the file: %v", c, slices.Sorted(maps.Keys(bits)), err)
		}
		for range 2 {
			counts, err := db.DeliveredOf(ctx, k, keys)
			if err != nil {
				t.Fatalf("copy %d: DeliveredOf: %v", c, err)
			}
			for i, e := range keys {
				if want := map[bool]int{true: 0, false: 1}[inMid(e)]; counts[i] != want {
					t.Fatalf("copy %d (bits %v): record %d at %s counts %d delivered, want %d", c, slices.Sorted(maps.Keys(bits)), i,
						time.UnixMilli(e.Time).UTC().Format(time.RFC3339Nano), counts[i], want)
				}
			}
		}
		per, err := db.DeliveredCounts(ctx, k, t0, t0.Add(3*time.Hour))
		if err != nil || !slices.Equal(per, wantMinutes) {
			t.Fatalf("copy %d: per-minute counts %v (%v), want %v", c, per, err, wantMinutes)
		}
		if end, err := db.DeliveredEnd(ctx, k); err != nil || !end.Equal(wantEnd) {
			t.Fatalf("copy %d: DeliveredEnd %v (%v), want %v", c, end, err, wantEnd)
		}
		if n := db.DamagedValues(); n != 1 {
			t.Fatalf("copy %d: %d damaged values counted, want 1", c, n)
		}
		if n := strings.Count(logs.String(), "delivered set is damaged"); n != 1 || !strings.Contains(logs.String(), `"account":"acme"`) {
			t.Fatalf("copy %d: %d warnings, want 1 naming the stream:\n%s", c, n, logs.String())
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A damaged value of a sink's held set is counted where a damaged value of
// a delivered set is (collector check's inspection and
// collector_checkpoint_damaged_values_total), once however often it is
// read, and reads as not held (that sink may get its records again: a
// copy, never a loss), while the values around it read as they were.
func TestADamagedHeldValueIsCountedAsADamagedDeliveredValueIs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(31, 7))
	k := record.Stream{Source: "dns", Account: "acme"}
	keys := hourKeys(rng, 2, 30)
	file := appliedFile(t, Changes{States: map[record.Stream]State{k: {Cursor: cursor.Cursor{Watermark: t0}}},
		Held: map[string]map[record.Stream][]cursor.Delivered{"kafka": {k: keys}}})
	// The value of the second hour, found in the file by its bytes.
	second := t0.Add(time.Hour).UnixMilli()
	var late []cursor.Delivered
	for _, e := range keys {
		if e.Time >= second {
			late = append(late, e)
		}
	}
	slices.SortFunc(late, compareDelivered)
	val := encodeSpan(second, late)
	at := bytes.Index(file, val)
	if at < 0 || bytes.LastIndex(file, val) != at {
		t.Fatalf("the second hour's value is not in the file once (at %d)", at)
	}
	file[at+len(val)/2] ^= 0x10
	p := writeCopy(t, file)
	if in, err := Inspect(p, 0); err != nil || in.DamagedValues != 1 || !strings.Contains(in.String(), "1 damaged values in the delivered or held sets") {
		t.Fatalf("Inspect: %q, %d damaged (%v); want 1", in, in.DamagedValues, err)
	}
	var logs bytes.Buffer
	db, err := Open(p, WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	if err != nil {
		t.Fatalf("a damaged held value stopped the file: %v", err)
	}
	defer db.Close()
	for range 2 {
		held, err := db.Held(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(held["kafka"][k]), len(keys)-len(late); got != want {
			t.Fatalf("%d entries held, want %d (the first hour's)", got, want)
		}
	}
	if n := db.DamagedValues(); n != 1 {
		t.Fatalf("%d damaged values counted after two reads, want 1", n)
	}
	if n := strings.Count(logs.String(), "held set is damaged"); n != 1 || !strings.Contains(logs.String(), `"sink":"kafka"`) {
		t.Fatalf("%d warnings, want 1 naming the sink:\n%s", n, logs.String())
	}
}

// hourKeys returns each keys at random times of each of the first hours
// after t0, with random id hashes.
func hourKeys(rng *rand.Rand, hours, each int) []cursor.Delivered {
	var keys []cursor.Delivered
	for h := range hours {
		for range each {
			keys = append(keys, cursor.Delivered{Time: t0.Add(time.Duration(h)*time.Hour + time.Duration(rng.Int64N(int64(time.Hour)))).UnixMilli(), Hash: rng.Uint64()})
		}
	}
	return keys
}

// appliedFile returns the bytes of a checkpoint file that one commit of c
// wrote.
func appliedFile(t *testing.T, c Changes) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cp.db")
	d, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Apply(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return file
}
