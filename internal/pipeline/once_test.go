package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/recheck"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source"
	"github.com/svcexport/collector/internal/window"
)

func filterFixture(t *testing.T) (*checkpoint.DB, record.Stream) {
	t.Helper()
	db, err := checkpoint.Open(filepath.Join(t.TempDir(), "checkpoint.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, record.Stream{Source: "dns", Account: "acme"}
}

// onceOf is the re-ask filter of stream k over db, alone (no pipeline).
func onceOf(db Store, k record.Stream) *once {
	return newOnce(db, k, nil, newMetrics(prometheus.NewRegistry(), &Pipeline{}))
}

// Two records whose keys agree (the first 64 bits of their ids and their
// time to the millisecond; made to collide here) are never taken for one:
// a page holding both, when the stream delivered one, delivers both (a
// copy, never a loss); a record alone of a key delivered before is left
// out (C7).
func TestAPageWithMoreRecordsOfAKeyThanDeliveredDeliversThemAll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, k := filterFixture(t)
	at := time.Date(2026, 11, 1, 10, 0, 0, 123_000_000, time.UTC)
	prefix := strings.Repeat("ab", 8)
	old := record.Envelope{ID: prefix + strings.Repeat("0", 48), Time: at}
	twin := record.Envelope{ID: prefix + strings.Repeat("1", 48), Time: at}
	other := record.Envelope{ID: strings.Repeat("cd", 32), Time: at.Add(time.Second)}
	if cursor.DeliveredOf(old.ID, old.Time) != cursor.DeliveredOf(twin.ID, twin.Time) {
		t.Fatal("the fixture's keys do not collide")
	}
	if err := db.Apply(ctx, checkpoint.Changes{
		States:    map[record.Stream]checkpoint.State{k: {Cursor: cursor.Cursor{Watermark: at.Add(-time.Hour)}}},
		Delivered: map[record.Stream][]cursor.Delivered{k: {cursor.DeliveredOf(old.ID, old.Time)}},
	}); err != nil {
		t.Fatal(err)
	}
	o := onceOf(db, k)

	page := []record.Envelope{twin, old, other}
	kept, keys, err := o.keep(ctx, page)
	if err != nil {
		t.Fatal(err)
	}
	if skipped := len(page) - len(kept); len(kept) != 3 || skipped != 0 || len(keys) != 3 {
		t.Errorf("a page of both records of a delivered key and a new one: kept %d, skipped %d; want all 3 kept", len(kept), skipped)
	}
	page = []record.Envelope{old, other}
	kept, _, err = o.keep(ctx, page)
	if err != nil {
		t.Fatal(err)
	}
	if skipped := len(page) - len(kept); len(kept) != 1 || kept[0].ID != other.ID || skipped != 1 {
		t.Errorf("a page of the delivered record and a new one: kept %v, skipped %d; want only the new one", kept, skipped)
	}
	// A restart asks a window again: the same record one millisecond
	// apart is another record.
	moved := old
	moved.Time = at.Add(time.Millisecond)
	if kept, _, err = o.keep(ctx, []record.Envelope{moved}); err != nil || len(kept) != 1 {
		t.Errorf("the id of a delivered record at another time: kept %d (%v); want it delivered", len(kept), err)
	}
}

// The filter holds what the pipeline has not committed yet: pages
// emitted and not yet committed are left out of a page asked again, and
// released once committed (the checkpoint holds them then).
func TestPagesInThePipelineAreNotDeliveredTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, k := filterFixture(t)
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	e := record.Envelope{ID: strings.Repeat("ef", 32), Time: at}
	o := onceOf(db, k)
	_, keys, err := o.keep(ctx, []record.Envelope{e})
	if err != nil || len(keys) != 1 {
		t.Fatalf("first delivery: %d keys, %v", len(keys), err)
	}
	o.emitted(0, keys)
	kept, _, err := o.keep(ctx, []record.Envelope{e})
	if skipped := 1 - len(kept); err != nil || len(kept) != 0 || skipped != 1 {
		t.Errorf("asked again while in the pipeline: kept %d, skipped %d, %v; want it left out", len(kept), skipped, err)
	}
	// Committed: the pending keys go, the checkpoint has them.
	if err := db.Apply(ctx, checkpoint.Changes{
		States:    map[record.Stream]checkpoint.State{k: {Cursor: cursor.Cursor{Watermark: at.Add(-time.Hour)}}},
		Delivered: map[record.Stream][]cursor.Delivered{k: keys},
	}); err != nil {
		t.Fatal(err)
	}
	o.released(1)
	kept, _, err = o.keep(ctx, []record.Envelope{e})
	if err != nil || len(kept) != 0 || len(o.pending) != 0 {
		t.Errorf("asked again once committed: kept %d, %d pages pending, %v; want it left out and nothing pending", len(kept), len(o.pending), err)
	}
}

// repeatPoller emits one page of records three times: fresh, then again
// (as a recheck would) while the first is still in the sinks, then once
// more after the first was committed; then it returns (once mode).
type repeatPoller struct {
	key  record.Stream
	db   *checkpoint.DB
	hold chan struct{} // the sinks write nothing until it is closed
	envs []record.Envelope
}

func (r *repeatPoller) Stream() record.Stream { return r.key }

func (*repeatPoller) Learner() recheck.Observer { return nil }

func (r *repeatPoller) Run(ctx context.Context, from cursor.Cursor, out source.Output) error {
	win := t0
	page := func(asked cursor.Asked) cursor.Page {
		pg := cursor.Page{Batch: record.Batch{Source: r.key.Source, Account: r.key.Account, WindowStart: win, WindowEnd: win.Add(time.Hour),
			Envelopes: append([]record.Envelope(nil), r.envs...)}, FetchedAt: t0, Asked: asked}
		if asked == cursor.AskedForward {
			// The window stays in flight (a next page to come), so that
			// the delivered set keeps its keys.
			pg.After = cursor.Cursor{Watermark: win, InFlight: &cursor.Chain{Window: window.Window{Start: win, End: win.Add(time.Hour)}, NextURL: "next-1", Pages: 1}}
		} else {
			pg.After, pg.Revisit = from, true
		}
		return pg
	}
	if err := out.Emit(ctx, page(cursor.AskedForward)); err != nil {
		return err
	}
	// The first is held in the sinks: in flight, not committed.
	if err := out.Emit(ctx, page(cursor.AskedLate)); err != nil {
		return err
	}
	close(r.hold)
	for i := 0; ; i++ {
		end, err := r.db.DeliveredEnd(ctx, r.key)
		if err != nil {
			return err
		}
		if !end.IsZero() {
			break // committed
		}
		if i == 3600 {
			return errors.New("the first page was not committed in an hour")
		}
		time.Sleep(time.Second) // the bubble's clock
	}
	return out.Emit(ctx, page(cursor.AskedLate))
}

// The filter works at the pipeline, whatever the producer: a page emitted
// again while the first is in flight, and again after its commit, reaches
// every sink once (C7), and the copies left out are counted by cause.
func TestAPageEmittedAgainReachesEverySinkOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db, k := filterFixture(t)
		hold := make(chan struct{})
		var envs []record.Envelope
		for i := range 50 {
			raw := []byte(`{"n":` + string(rune('0'+i%10)) + `,"i":"` + strings.Repeat("x", i) + `"}`)
			id, _ := record.ID(k.Source, raw)
			envs = append(envs, record.Envelope{ID: id, Source: k.Source, Account: k.Account, Time: t0.Add(time.Duration(i) * time.Second), Record: raw})
		}
		fast, slow := &testSink{hold: hold}, &testSink{hold: hold}
		reg := prometheus.NewRegistry()
		pr := &repeatPoller{key: k, db: db, hold: hold, envs: envs}
		pl := New(testConfig(), db, two(fast, slow), []Producer{pr}, reg, slog.New(slog.DiscardHandler), nil)
		if err := pl.Run(t.Context()); err != nil {
			t.Fatal(err)
		}
		for _, s := range []*testSink{fast, slow} {
			s.mu.Lock()
			copies := 0
			for _, n := range s.ids {
				copies += n - 1
			}
			if len(s.ids) != len(envs) || copies != 0 {
				t.Errorf("a sink holds %d distinct records and %d copies; want %d and none", len(s.ids), copies, len(envs))
			}
			s.mu.Unlock()
		}
		left := testutil.ToFloat64(pl.m.suppressed.WithLabelValues(k.Source, k.Account, SuppressedRecheck))
		if left != float64(2*len(envs)) {
			t.Errorf("%v copies left out as a recheck's, want %d", left, 2*len(envs))
		}
	})
}

// countingObserver counts what the once filter tells a stream's learner.
type countingObserver struct{ fresh, late int }

func (c *countingObserver) ObserveFresh(n int, _ time.Time) { c.fresh += n }

func (c *countingObserver) ObserveLate(envs []record.Envelope, _ time.Time) { c.late += len(envs) }

func (c *countingObserver) Delays() cursor.Delays { return cursor.Delays{} }

// An inventory walk's snapshots (agent_info, cursor.AskedInventory) are
// kept once by the walk's digests, not by the delivered set: the filter
// passes them all, keeps no key of them (so that they never raise the
// per-minute counts a recheck compares with the server's: a late record
// in the walk's minute would look delivered and be lost) and teaches the
// learner nothing. The same records on the forward path are filtered,
// keyed and learnt from.
func TestAnInventoryPageIsNeitherFilteredNorKeyedNorLearntFrom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, k := filterFixture(t)
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	held := record.Envelope{ID: strings.Repeat("ab", 32), Time: at}
	fresh := record.Envelope{ID: strings.Repeat("cd", 32), Time: at}
	if err := db.Apply(ctx, checkpoint.Changes{
		States:    map[record.Stream]checkpoint.State{k: {Cursor: cursor.Cursor{Watermark: at.Add(-time.Hour)}}},
		Delivered: map[record.Stream][]cursor.Delivered{k: {cursor.DeliveredOf(held.ID, held.Time)}},
	}); err != nil {
		t.Fatal(err)
	}
	obs := &countingObserver{}
	o := newOnce(db, k, obs, newMetrics(prometheus.NewRegistry(), &Pipeline{}))
	page := func(asked cursor.Asked) cursor.Page {
		return cursor.Page{Batch: record.Batch{Source: k.Source, Account: k.Account,
			Envelopes: []record.Envelope{held, fresh}}, Asked: asked, FetchedAt: at.Add(time.Minute)}
	}
	inv, err := o.filter(ctx, page(cursor.AskedInventory))
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Batch.Envelopes) != 2 || inv.Delivered != nil || obs.fresh+obs.late != 0 {
		t.Fatalf("inventory page: %d records kept, %d keys, learnt %+v; want 2, none, nothing",
			len(inv.Batch.Envelopes), len(inv.Delivered), *obs)
	}
	fwd, err := o.filter(ctx, page(cursor.AskedForward))
	if err != nil {
		t.Fatal(err)
	}
	if len(fwd.Batch.Envelopes) != 1 || fwd.Batch.Envelopes[0].ID != fresh.ID || len(fwd.Delivered) != 1 || obs.fresh != 1 {
		t.Fatalf("forward page: %d records kept, %d keys, learnt %+v; want the fresh one, its key, 1 fresh",
			len(fwd.Batch.Envelopes), len(fwd.Delivered), *obs)
	}
}

// The keys in flight are the pending pages' own, sorted and searched: no
// index beside them that grows with every page and never shrinks while
// some page is pending (issue 30). Several pages in flight holding one
// key count it as many times as they hold it (C7: a page holding more
// records of a key than the stream holds delivers the rest).
func TestKeysInFlightAreThePendingPagesOwn(t *testing.T) {
	// Not parallel: AllocsPerRun counts every allocation of the process.
	ctx := context.Background()
	db, k := filterFixture(t)
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	const n = 5000 // a full page
	page := func(first int) []record.Envelope {
		envs := make([]record.Envelope, n)
		for i := range envs {
			envs[i] = record.Envelope{ID: fmt.Sprintf("%064x", first+i), Time: at.Add(time.Duration(first+i) * time.Millisecond)}
		}
		return envs
	}
	o := onceOf(db, k)
	const runs = 4
	pages := make([][]cursor.Delivered, runs+1) // AllocsPerRun runs once more first
	for p := range pages {
		pages[p] = make([]cursor.Delivered, n)
		for i, e := range page(p * n) {
			pages[p][i] = cursor.DeliveredOf(e.ID, e.Time)
		}
	}
	seq := uint64(0)
	allocs := testing.AllocsPerRun(runs, func() {
		o.emitted(seq, pages[seq])
		seq++
	})
	// At most the growth of the pending list; an index of the keys takes
	// hundreds a page.
	if allocs > 2 {
		t.Errorf("noting a page of %d keys in flight took %.0f allocations", n, allocs)
	}

	// A page asked again while two copies of its first half are in flight.
	again := page(0)
	half := make([]cursor.Delivered, n/2)
	for i := range half {
		half[i] = cursor.DeliveredOf(again[i].ID, again[i].Time)
	}
	o.emitted(seq, half)
	twice := append(again[:n/2:n/2], again[:n/2]...)      // the first half twice: both held
	thrice := append(slices.Clone(twice), again[:n/2]...) // three times: more than held, so all delivered
	if kept, _, err := o.keep(ctx, twice); err != nil || len(kept) != 0 {
		t.Errorf("records held twice in flight asked twice: kept %d (%v), want none", len(kept), err)
	}
	if kept, _, err := o.keep(ctx, thrice); err != nil || len(kept) != len(thrice) {
		t.Errorf("records held twice in flight asked three times: kept %d (%v), want all %d", len(kept), err, len(thrice))
	}
	if kept, _, err := o.keep(ctx, again[n/2:]); err != nil || len(kept) != 0 {
		t.Errorf("records held once in flight: kept %d (%v), want none", len(kept), err)
	}
	o.released(seq + 1)
	if len(o.pending) != 0 {
		t.Errorf("%d pages pending after all were committed", len(o.pending))
	}
}

// collector_record_delay_seconds observes every new record the filter
// keeps, on time or recovered late: how long after its record time its
// page was fetched. A record the stream held already, an alert update
// (asked again) and an inventory snapshot are not new records and are not
// observed; the late ones also go to collector_late_delivery_seconds.
func TestEveryNewRecordIsObservedInTheRecordDelay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, k := filterFixture(t)
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	held := record.Envelope{ID: strings.Repeat("ab", 32), Time: at}
	if err := db.Apply(ctx, checkpoint.Changes{
		States:    map[record.Stream]checkpoint.State{k: {Cursor: cursor.Cursor{Watermark: at.Add(-time.Hour)}}},
		Delivered: map[record.Stream][]cursor.Delivered{k: {cursor.DeliveredOf(held.ID, held.Time)}},
	}); err != nil {
		t.Fatal(err)
	}
	m := newMetrics(prometheus.NewRegistry(), &Pipeline{})
	o := newOnce(db, k, nil, m)
	rec := func(i int) record.Envelope {
		return record.Envelope{ID: fmt.Sprintf("%064x", i+1), Time: at.Add(time.Duration(i) * time.Second)}
	}
	for _, pg := range []cursor.Page{
		// Two new records fetched 30 s and 29 s after their time, one held.
		{Batch: record.Batch{Envelopes: []record.Envelope{held, rec(0), rec(1)}}, Asked: cursor.AskedForward, FetchedAt: at.Add(30 * time.Second)},
		// One late record found 10 minutes after its time.
		{Batch: record.Batch{Envelopes: []record.Envelope{rec(2)}}, Asked: cursor.AskedLate, FetchedAt: at.Add(602 * time.Second)},
		{Batch: record.Batch{Envelopes: []record.Envelope{rec(3)}}, Asked: cursor.AskedAgain, FetchedAt: at.Add(time.Hour)},
		{Batch: record.Batch{Envelopes: []record.Envelope{rec(4)}}, Asked: cursor.AskedInventory, FetchedAt: at.Add(time.Hour)},
	} {
		pg.Batch.Source, pg.Batch.Account = k.Source, k.Account
		if _, err := o.filter(ctx, pg); err != nil {
			t.Fatal(err)
		}
	}
	count, sum := histogram(t, m.recordDelay.WithLabelValues(k.Source))
	if count != 3 || sum != 30+29+600 {
		t.Fatalf("collector_record_delay_seconds: %d records, %v s in all; want 3, 659 s", count, sum)
	}
	if count, sum := histogram(t, m.lateDelivery.WithLabelValues(k.Source, k.Account)); count != 1 || sum != 600 {
		t.Fatalf("collector_late_delivery_seconds: %d records, %v s in all; want 1, 600 s", count, sum)
	}
}

// histogram returns the count and sum of h.
func histogram(t *testing.T, h prometheus.Observer) (uint64, float64) {
	t.Helper()
	var pb dto.Metric
	if err := h.(prometheus.Metric).Write(&pb); err != nil {
		t.Fatal(err)
	}
	return pb.GetHistogram().GetSampleCount(), pb.GetHistogram().GetSampleSum()
}
