package recheck_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/recheck"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/simtest"
)

type simClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *simClock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *simClock) set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }

// fetched is when a simulated poller fetched one window: what it
// delivered is the simulator's truth at the last fetch (visible sets only
// grow, so the last fetch holds every earlier one), computed at the end by
// setting the simulator's clock back.
type fetched struct {
	start, end  time.Time
	first, last time.Time
}

// simStream plays a poller of one stream against the simulator: it fetches
// a new window every step (lag behind the clock) and rechecks what is due
// within its budget share.
type simStream struct {
	t       *testing.T
	sim     *apisim.Server
	source  string
	edge    bool
	plan    recheck.Plan
	lim     *recheck.Limiter
	log     []cursor.LoggedWindow
	windows []*fetched         // by start
	pending *recheck.Narrowing // a narrowing waiting for budget
	unit    recheck.Unit
	// counts, pages: requests spent on rechecks (counts and edge re-asks;
	// page fetches of refetches that the first page did not hold).
	counts, pages, expired int
	// learn: the points are learnt as a poller with recheck: auto learns
	// them (delays from the records its fetches find, Learnt at every
	// step with cadence, a sweep every cadence).
	learn   bool
	base    recheck.Config
	delays  cursor.Delays
	cadence time.Duration
	swept   time.Time
	// deaf: the stream learns no late record found before it.
	deaf time.Time
}

// step sets the points of a step at now: the learnt ones, with a sweep
// every cadence.
func (s *simStream) step(now time.Time) {
	if !s.learn {
		return
	}
	s.plan = s.base.Learnt(s.delays, cursor.Delays{}, s.cadence)
	if now.Sub(s.swept) >= s.cadence {
		s.plan.Sweep, s.swept = true, now
	}
}

// observe learns from a refetch of [a, b) at now what a poller learns from
// the records it delivers: each record that became visible since its
// window was last fetched is late by now minus its record time.
func (s *simStream) observe(a, b, now time.Time) {
	if !s.learn || now.Before(s.deaf) {
		return
	}
	vs, err := s.sim.TruthList(context.Background(), s.source, "acme", a, b)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, v := range vs {
		i, _ := slices.BinarySearchFunc(s.windows, v.Time, func(f *fetched, t time.Time) int {
			if !f.end.After(t) {
				return -1
			}
			return 1
		})
		if i < len(s.windows) && v.At.After(s.windows[i].last) && !v.At.After(now) {
			recheck.ObserveLate(&s.delays, now.Sub(v.Time), now)
		}
	}
}

func (s *simStream) truth(a, b time.Time) record.Digest {
	n, x := s.sim.Truth(s.source, "acme", a, b)
	d := record.Digest{Count: n}
	if _, err := hex.Decode(d.Xor[:], []byte(x)); err != nil || n < 0 {
		s.t.Fatalf("truth of %s [%v, %v): %d %q", s.source, a, b, n, x)
	}
	return d
}

func (s *simStream) fetchNew(start, end, now time.Time) {
	d := s.truth(start, end)
	s.windows = append(s.windows, &fetched{start: start, end: end, first: now, last: now})
	if s.learn {
		recheck.ObserveFresh(&s.delays, int(d.Count), now)
	}
	digest := ""
	if s.edge {
		digest = d.Hex()
	}
	if e := s.plan.Entry(start, end, d.Count, digest, now); !s.plan.Done(e) {
		s.log = append(s.log, e)
	}
}

// apply stores an update in the log, as the checkpoint would.
func (s *simStream) apply(u recheck.Update) {
	s.log = slices.DeleteFunc(s.log, func(w cursor.LoggedWindow) bool { return slices.ContainsFunc(u.Replaces, w.Start.Equal) })
	s.log = append(s.log, u.Entry)
	slices.SortFunc(s.log, func(a, b cursor.LoggedWindow) int { return a.Start.Compare(b.Start) })
}

// refetch fetches [a, b) again at now: every window in it is delivered
// as visible now.
func (s *simStream) refetch(a, b, now time.Time) {
	s.observe(a, b, now)
	i, _ := slices.BinarySearchFunc(s.windows, a, func(f *fetched, t time.Time) int { return f.start.Compare(t) })
	for ; i < len(s.windows) && !s.windows[i].end.After(b); i++ {
		s.windows[i].last = now
	}
}

func (s *simStream) finish(r recheck.Result, now time.Time) {
	for _, k := range r.Keep {
		s.apply(k)
	}
	for _, f := range r.Refetch {
		pages := int(max(1, (f.Entry.Count+4999)/5000))
		if f.Counted {
			pages-- // the count's first page is the fetch's first page
		}
		s.pages += pages
		s.refetch(f.Start(), f.End(), now)
		s.apply(f.Update)
	}
}

// recheck spends what the limiter allows on due units, oldest first.
func (s *simStream) recheck(now time.Time) {
	exp := s.plan.Expired(s.log, now)
	s.expired += len(exp)
	cut := s.plan.Config().PruneBefore(now)
	s.log = slices.DeleteFunc(s.log, func(w cursor.LoggedWindow) bool { return !w.End.After(cut) })
	for {
		if s.pending == nil {
			units := s.plan.Due(s.log, now)
			if len(units) == 0 {
				return
			}
			u := units[0]
			if u.Edge() {
				if !s.lim.Allow() {
					return
				}
				s.counts++
				got := make([]record.Digest, len(u.Windows))
				for i, w := range u.Windows {
					got[i] = s.truth(w.Start, w.End)
				}
				r := s.plan.Settle(u.CompareEdge(got))
				for _, f := range r.Refetch {
					s.refetch(f.Start(), f.End(), now)
					s.apply(f.Update)
				}
				for _, k := range r.Keep {
					s.apply(k)
				}
				continue
			}
			s.pending, s.unit = u.Narrow(), u
		}
		for q, ok := s.pending.Next(); ok; q, ok = s.pending.Next() {
			if !s.lim.Allow() {
				return
			}
			s.counts++
			s.pending.Observe(s.truth(q.Start, q.End).Count)
		}
		s.finish(s.plan.Settle(s.pending.Result()), now)
		s.pending = nil
	}
}

// C3 (late data) and C4 (budget): a poller that fetches each window once,
// 30 minutes after its end, loses the records that arrive up to two hours
// late; with rechecks at 1h, 6h and 24h within 10% of the budget it
// delivers every record, core and edge alike, and no recheck expires.
func TestC3RechecksRecoverEveryLateRecordWithinTheBudgetShare(t *testing.T) {
	// Windows of 5 minutes: every recheck fits the share one window at a
	// time. Windows of 2 minutes: three rechecks of 30 windows an hour
	// would need 90 requests; the share allows 48, so due windows wait and
	// merge into larger units.
	for _, step := range []time.Duration{5 * time.Minute, 2 * time.Minute} {
		t.Run(step.String(), func(t *testing.T) { recheckScenario(t, step) })
	}
}

func recheckScenario(t *testing.T, step time.Duration) {
	start := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	clk := &simClock{t: start}
	sim := simtest.Start(t, func(c *apisim.Config) {
		c.Now = clk.now
		c.LateMax = 2 * time.Hour
	})
	cfg := recheck.DefaultConfig()
	cfg.Auto, cfg.Offsets = false, recheck.DefaultOffsets()
	mk := func(source string, edge bool) *simStream {
		return &simStream{t: t, sim: sim, source: source, edge: edge, plan: cfg.Plan(),
			lim: recheck.NewLimiter(cfg.Share, 480, time.Hour, clk.now)}
	}
	streams := []*simStream{mk(apisim.SourceUserLogins, false), mk(apisim.SourceEdgeAuditEvents, true)}
	const lag = 30 * time.Minute
	tailFrom := start.Add(-lag)
	hours := 30
	for now := start.Add(step); !now.After(start.Add(time.Duration(hours) * time.Hour)); now = now.Add(step) {
		clk.set(now)
		for _, s := range streams {
			s.fetchNew(now.Add(-lag-step), now.Add(-lag), now)
			s.recheck(now)
		}
	}
	end := clk.now()
	for _, s := range streams {
		var windows, lostOnce, lost int
		var rows, late int64
		for _, f := range s.windows {
			if f.end.Add(cfg.Offsets[len(cfg.Offsets)-1]).After(end) || f.start.Before(tailFrom) {
				continue // its last recheck point is still to come
			}
			windows++
			clk.set(f.first)
			first := s.truth(f.start, f.end)
			clk.set(f.last)
			delivered := s.truth(f.start, f.end)
			clk.set(end)
			now := s.truth(f.start, f.end)
			rows += now.Count
			if first.Count != now.Count {
				lostOnce++
				late += now.Count - first.Count
			}
			if delivered != now {
				lost++
				t.Errorf("%s [%v, %v): delivered %d (xor %.8s), truth %d (xor %.8s)", s.source, f.start, f.end, delivered.Count, delivered.Hex(), now.Count, now.Hex())
			}
		}
		t.Logf("%s: %d windows, %d rows; fetched once %d windows would lack %d rows (%.1f%%); rechecks made %d requests and %d extra pages in %dh (budget share %d/h), %d expired",
			s.source, windows, rows, lostOnce, late, 100*float64(late)/float64(rows), s.counts, s.pages, hours, s.lim.Cap(), s.expired)
		if windows < 50 || lostOnce == 0 {
			t.Fatalf("%s: the scenario has %d settled windows and %d with late records: it proves nothing", s.source, windows, lostOnce)
		}
		if lost != 0 || s.expired != 0 {
			t.Fatalf("%s: %d windows lost records, %d rechecks expired", s.source, lost, s.expired)
		}
	}
}

// C3, issue 29 item 3: a learnt schedule whose delays grow keeps the points
// of the windows logged before the growth. For three hours the platform
// makes few records late (8 in 1,000), by up to 5 hours, which the stream
// does not learn from (a prior that fades would take them at once, issue
// 31; this test is about a schedule that changes), so the points stay the
// prior's (dense phase 5m plus the 2-minute cadence: [14m 28m 1h 6h 24h]). From then on a tenth of the records are
// late by up to 40 minutes: the dense phase learns them and the points
// become [1h 6h 24h]. A window more than an hour old had then passed three
// points of five; kept as an index into the points it counted as done,
// and its records 2 to 5 hours late were never fetched, nor was the window
// counted as expired. Every record of the windows logged before the
// growth is delivered by their 6h point. Nine and a half hours of API
// time in a testing/synctest bubble, windows of a minute.
func TestALearntScheduleWhoseDelaysGrowKeepsThePointsOfOlderWindows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		begin := time.Now()
		sw := begin.Add(3 * time.Hour)
		sim, _ := simtest.StartInMemory(t, func(c *apisim.Config) {
			c.LateMax, c.LateShare = 5*time.Hour, 0.008
			c.LateMaxAfter, c.LateSwitch, c.LateShareAfter = 40*time.Minute, sw, 0.1
			c.WaveAmplitude, c.BurstProbability = 0, 0
			c.Rates[apisim.SourceDNS] = 2000
		})
		// Grown windows are narrowed down to each one (RefetchRows 0,
		// MaxRequests ample) and the budget is the whole of it: a
		// refetch of several windows stores one entry whose points count
		// from its end, which delays the points of the older ones, and a
		// short budget delays every point; this test is about the
		// points alone.
		base := recheck.DefaultConfig()
		base.RefetchRows, base.MaxRequests = 0, 1000
		s := &simStream{t: t, sim: sim, source: apisim.SourceDNS, plan: base.Plan(), base: base, learn: true, cadence: 2 * time.Minute,
			lim: recheck.NewLimiter(1, 480, time.Hour, time.Now), deaf: sw}
		const step, lag = time.Minute, time.Minute
		end := sw.Add(6*time.Hour + 30*time.Minute)
		var before, after []time.Duration
		for now := begin.Add(step); !now.After(end); now = now.Add(step) {
			time.Sleep(time.Until(now))
			s.step(now)
			if now.Equal(sw) {
				before = s.plan.Points
			}
			s.fetchNew(now.Add(-lag-step), now.Add(-lag), now)
			s.recheck(now)
		}
		after = s.plan.Points
		t.Logf("points before the delays grew %v, at the end %v; %d count requests, %d extra pages, %d expired", before, after, s.counts, s.pages, s.expired)
		if len(before) != 5 || len(after) != 3 || s.expired != 0 {
			t.Fatalf("points %v before the growth, %v after, %d windows expired: want the prior's five, then three, none expired", before, after, s.expired)
		}
		first := begin.Add(-lag)
		vs, err := sim.TruthList(context.Background(), s.source, "acme", first, sw)
		if err != nil {
			t.Fatal(err)
		}
		var late, missing, missingLate int
		for _, v := range vs {
			i := int(v.Time.Sub(first) / step)
			f := s.windows[i]
			if v.Time.Before(f.start) || !v.Time.Before(f.end) {
				t.Fatalf("record at %v placed in [%v, %v)", v.Time, f.start, f.end)
			}
			d := v.At.Sub(v.Time)
			if d >= 2*time.Hour {
				late++
			}
			if v.At.After(f.last) {
				missing++
				if d >= 2*time.Hour {
					missingLate++
				}
			}
		}
		t.Logf("%d records in the windows logged before the delays grew, %d of them 2-5 h late; %d missing (%d of the late ones)",
			len(vs), late, missing, missingLate)
		if late < 10 {
			t.Fatalf("only %d records 2-5 h late: the scenario proves nothing", late)
		}
		if missing != 0 {
			t.Errorf("%d records of the windows logged before the delays grew were never fetched, %d of them 2-5 h late", missing, missingLate)
		}
	})
}

// Issue 31 (one schedule), C3: the plan a stream learns changes between
// two asks of a window: its points shrink, grow and move (here the
// cadence the budget affords changes at random every step, and with it
// the dense phase, 10m to 1h, and the sparse points, [20m 40m 1h 6h 24h]
// to [1h 6h 24h]). Every window is asked at or before the due it was
// promised at its last ask (its end plus the first point after that ask
// of the plan then in force, which the test computes from the plan's
// points, and which the entry stores), none leaves the log before it was
// asked at 24h (the last point of every plan) and none expires; and every
// record of the windows whose points all came is delivered. Without the
// stored due a window promised its 40m point under a short dense phase
// waited for the 1h point of a longer one learnt meanwhile. Thirty-six
// hours of API time in a testing/synctest bubble, windows of 5 minutes.
func TestALearntScheduleThatChangesBetweenTwoAsksKeepsEveryPromisedDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		begin := time.Now()
		sim, _ := simtest.StartInMemory(t, func(c *apisim.Config) {
			c.LateMax, c.LateShare = 3*time.Hour, 0.2
			c.WaveAmplitude, c.BurstProbability = 0, 0
			c.Rates[apisim.SourceDNS] = 600
		})
		base := recheck.DefaultConfig()
		base.RefetchRows, base.MaxRequests = 0, 1000
		// learn, with nothing to hear (deaf): the plan follows the cadence.
		s := &simStream{t: t, sim: sim, source: apisim.SourceDNS, plan: base.Plan(), base: base, learn: true,
			lim: recheck.NewLimiter(1, 1_000_000, time.Hour, time.Now), deaf: begin.Add(1000 * time.Hour)}
		cadences := []time.Duration{5 * time.Minute, 10 * time.Minute, 25 * time.Minute, 55 * time.Minute}
		rng := rand.New(rand.NewPCG(31, 1))
		const step, lag = 5 * time.Minute, 5 * time.Minute
		end := begin.Add(36 * time.Hour)
		type track struct {
			asked, promised time.Time // promised zero: no point left
		}
		tracks := map[time.Time]*track{}
		promise := func(w cursor.LoggedWindow) time.Time {
			i := slices.IndexFunc(s.plan.Points, func(p time.Duration) bool { return p > w.Passed })
			if i < 0 {
				return time.Time{}
			}
			return w.End.Add(s.plan.Points[i])
		}
		plans := map[string]bool{}
		var early, late, moved int
		for now := begin.Add(step); !now.After(end); now = now.Add(step) {
			time.Sleep(time.Until(now))
			s.cadence = cadences[rng.IntN(len(cadences))]
			s.step(now)
			plans[fmt.Sprint(s.plan.Points)] = true
			s.fetchNew(now.Add(-lag-step), now.Add(-lag), now)
			s.recheck(now)
			in := map[time.Time]bool{}
			for _, w := range s.log {
				in[w.Start] = true
				tr := tracks[w.Start]
				if tr == nil {
					tr = &track{}
					tracks[w.Start] = tr
				}
				if !w.Checked().After(tr.asked) {
					continue
				}
				if !tr.asked.IsZero() { // asked again now: by its promise?
					switch {
					case tr.promised.IsZero() || now.After(tr.promised):
						late++
						t.Errorf("window [%v, %v) asked %v after its end, promised %v at its ask at %v",
							w.Start.Sub(begin), w.End.Sub(begin), now.Sub(w.End), tr.promised.Sub(w.End), tr.asked.Sub(w.End))
					case now.Before(tr.promised):
						early++
					}
				}
				tr.asked, tr.promised = w.Checked(), promise(w)
				if !w.Due.Equal(tr.promised) {
					t.Errorf("window [%v, %v) asked at %v stores due %v, want %v", w.Start.Sub(begin), w.End.Sub(begin),
						w.Checked().Sub(w.End), w.Due.Sub(w.End), tr.promised.Sub(w.End))
				}
			}
			for start, tr := range tracks {
				if in[start] {
					continue
				}
				// It left the log (the horizon): asked at its last point.
				if e := start.Add(step); tr.asked.Sub(e) < 24*time.Hour {
					t.Errorf("window [%v, %v) left the log last asked %v after its end, before its 24h point", start.Sub(begin), e.Sub(begin), tr.asked.Sub(e))
				}
				delete(tracks, start)
				moved++
			}
		}
		t.Logf("%d plans %v; %d asks before their promised due (a point learnt sooner or a sweep), %d after; %d windows done; %d count requests, %d extra pages",
			len(plans), slices.Sorted(maps.Keys(plans)), early, late, moved, s.counts, s.pages)
		if len(plans) < 3 || moved < 100 || s.expired != 0 {
			t.Fatalf("%d plans, %d windows done, %d expired: the scenario proves nothing, or windows expired", len(plans), moved, s.expired)
		}
		vs, err := sim.TruthList(context.Background(), s.source, "acme", begin.Add(-lag), end.Add(-25*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		var missing, lateRecords int
		for _, v := range vs {
			f := s.windows[int(v.Time.Sub(begin.Add(-lag))/step)]
			if v.At.Sub(v.Time) > 30*time.Minute {
				lateRecords++
			}
			if v.At.After(f.last) {
				missing++
			}
		}
		if lateRecords < 10 || missing != 0 {
			t.Fatalf("%d records of the settled windows, %d of them late past 30m, %d never fetched", len(vs), lateRecords, missing)
		}
	})
}
