package recheck_test

import (
	"encoding/hex"
	"slices"
	"sync"
	"testing"
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
	cfg     recheck.Config
	lim     *recheck.Limiter
	log     []cursor.LoggedWindow
	windows []*fetched         // by start
	pending *recheck.Narrowing // a narrowing waiting for budget
	unit    recheck.Unit
	// counts, pages: requests spent on rechecks (counts and edge re-asks;
	// page fetches of refetches that the first page did not hold).
	counts, pages, expired int
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
	digest := ""
	if s.edge {
		digest = d.Hex()
	}
	if e := s.cfg.Entry(start, end, d.Count, digest, now); !s.cfg.Done(e) {
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
	exp := s.cfg.Expired(s.log, now)
	s.expired += len(exp)
	cut := s.cfg.PruneBefore(now)
	s.log = slices.DeleteFunc(s.log, func(w cursor.LoggedWindow) bool { return !w.End.After(cut) })
	for {
		if s.pending == nil {
			units := s.cfg.Due(s.log, now)
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
				r := u.CompareEdge(got)
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
		s.finish(s.pending.Result(), now)
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
		return &simStream{t: t, sim: sim, source: source, edge: edge, cfg: cfg,
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
