package checkpoint

import (
	"context"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/recheck"
	"github.com/svcexport/collector/internal/record"
)

// duePlans are two plans of recheck: auto as a stream learns them: fast
// (a 1-minute cadence: dense phase 6m, points [12m 24m 1h 6h 24h]) before
// a restart, slow (a cadence of 55 minutes: dense phase 1h, points
// [1h 6h 24h]) after it, before anything else was learnt.
func duePlans(t *testing.T) (fast, slow recheck.Plan) {
	t.Helper()
	c := recheck.DefaultConfig()
	fast = c.Learnt(cursor.Delays{}, cursor.Delays{}, time.Minute)
	slow = c.Learnt(cursor.Delays{}, cursor.Delays{}, 55*time.Minute)
	if fast.Points[1] != 24*time.Minute || slow.Points[0] != time.Hour {
		t.Fatalf("plans %v and %v, want [12m 24m ...] and [1h ...]", fast.Points, slow.Points)
	}
	return fast, slow
}

// askedAt12m is the entry of the minute after t0, fetched 30 s after its
// end and asked again at its 12m point under fast: due at its 24m point.
func askedAt12m(fast recheck.Plan) cursor.LoggedWindow {
	e := fast.Entry(t0, t0.Add(time.Minute), 7, "", t0.Add(time.Minute+30*time.Second))
	e.Passed = 12 * time.Minute
	return fast.Asked(e)
}

// Issue 31 (one schedule), C3: a window asked at its 12m point of a fast
// plan is due at 24m; the collector restarts, and the plan it learns anew
// has its first point at 1h. The due time the checkpoint kept survives
// the restart and is honoured: the window is due at 24m, not before, and
// not only at 1h.
func TestAStoredDueTimeSurvivesARestartAndARelearntPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fast, slow := duePlans(t)
	e := askedAt12m(fast)
	d, path := openTemp(t)
	if err := d.Apply(ctx, Changes{Windows: map[record.Stream]cursor.WindowChanges{dnsAcme: {Put: []cursor.LoggedWindow{e}}}}); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d2, err := Open(path) // the restart
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	log := slow.Load(mustWindows(t, d2, dnsAcme))
	if len(log) != 1 || !log[0].Due.Equal(e.End.Add(24*time.Minute)) {
		t.Fatalf("after the restart: %+v, want due at the end plus 24m", log)
	}
	if us := slow.Due(log, e.End.Add(24*time.Minute-time.Second)); len(us) != 0 {
		t.Errorf("due before its 24m point")
	}
	if us := slow.Due(log, e.End.Add(24*time.Minute)); len(us) != 1 {
		t.Errorf("not due at its stored 24m point under a plan whose first point is 1h: %d units", len(us))
	}
	if next, ok := slow.NextDue(log, e.End.Add(20*time.Minute)); !ok || !next.Equal(e.End.Add(24*time.Minute)) {
		t.Errorf("next due %v %v after the end, want 24m", next.Sub(e.End), ok)
	}
}

// Issue 31: an entry written by a version that kept no due time (version
// 2: passed_ns only, as the collector wrote it before) reads with none,
// and the plan in force when it is loaded gives it the first of its
// points after Passed: every point still to come stays to come. Written
// back, it takes version 3 with its due time.
func TestAnEntryWithoutADueTimeGetsItFromPassedAtLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fast, slow := duePlans(t)
	e := askedAt12m(fast)
	d, path := openTemp(t)
	if err := d.Apply(ctx, Changes{Windows: map[record.Stream]cursor.WindowChanges{dnsAcme: {Put: []cursor.LoggedWindow{e}}}}); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// The entry as version 2 wrote it.
	v2 := `{"v":2,"start":"2026-11-20T00:00:00Z","end":"2026-11-20T00:01:00Z","count":7,"fetched_at":"2026-11-20T00:01:30Z","passed_ns":720000000000}`
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = bdb.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketWindows).Bucket(encodeKey(dnsAcme)).Put(timeKey(e.Start), []byte(v2))
	})
	if cerr := bdb.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	d2, err := Open(path)
	if err != nil {
		t.Fatalf("a log of version 2 entries: %v", err)
	}
	defer d2.Close()
	read := mustWindows(t, d2, dnsAcme)
	if len(read) != 1 || !read[0].Due.IsZero() || read[0].Passed != 12*time.Minute || read[0].Count != 7 {
		t.Fatalf("version 2 entry read as %+v, want passed 12m and no due", read)
	}
	for _, tc := range []struct {
		name string
		p    recheck.Plan
		want time.Duration
	}{{"the plan it was asked under", fast, 24 * time.Minute}, {"a plan learnt anew", slow, time.Hour}} {
		log := tc.p.Load(read)
		if !log[0].Due.Equal(e.End.Add(tc.want)) || tc.p.Done(log[0]) {
			t.Errorf("%s: loaded due %v after the end (done %v), want %v", tc.name, log[0].Due.Sub(e.End), tc.p.Done(log[0]), tc.want)
		}
	}
	back := fast.Load(read)
	if err := d2.Apply(ctx, Changes{Windows: map[record.Stream]cursor.WindowChanges{dnsAcme: {Put: back}}}); err != nil {
		t.Fatal(err)
	}
	windowsEqual(t, mustWindows(t, d2, dnsAcme), back)
	if err := d2.Close(); err != nil {
		t.Fatal(err)
	}
	raw := rawWindowValues(t, path, dnsAcme)
	if len(raw) != 1 || !strings.Contains(raw[0], `"v":3,`) || !strings.Contains(raw[0], `"due":"2026-11-20T00:25:00Z"`) {
		t.Errorf("written back: %v", raw)
	}
}
