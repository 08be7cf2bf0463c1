package apisim

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
)

// Serving a window: the window's records are indexed in time order by a
// plan, shuffled by a permutation, and page k scans the permutation from
// the chain's cursor. Only the rows a page needs are generated.

// lateness is how late records become visible (C3: late data): a share
// of them (share1000 of every 1,000; 1,000: all) with a delay in [0, max]
// ms, and from record time at on (when after > 0) shareAfter1000 of them
// in [0, after] ms: the platform's delays changing during a run.
type lateness struct {
	max, share1000, after, at, shareAfter1000 int64
}

// on reports whether any record can be late.
func (l lateness) on() bool { return l.max > 0 || l.after > 0 }

// most is the largest delay of any record.
func (l lateness) most() int64 { return max(l.max, l.after) }

// delay is a record's ingestion delay in ms.
func (l lateness) delay(key uint64, t int64) int64 {
	late, share := l.max, l.share1000
	if l.after > 0 && t >= l.at {
		late, share = l.after, l.shareAfter1000
	}
	if late <= 0 || int64(mix64(key^saltLateShare)%1000) >= share {
		return 0
	}
	return int64(mix64(key^saltLate) % uint64(late+1))
}

// visible reports whether a record of time t exists and has been ingested
// at asOf: records with time >= asOf do not exist yet, and a record becomes
// visible only at t plus its delay.
func visible(key uint64, t, asOf int64, late lateness) bool {
	return t < asOf && t+late.delay(key, t) <= asOf
}

// permKey keys the permutation of one window of one stream.
func permKey(st *stream, start, end int64) uint64 {
	return mix64(st.key^saltPerm^mix64(uint64(start))) ^ mix64(uint64(end)*golden)
}

func (s *Server) lateness() lateness {
	l := lateness{max: s.cfg.LateMax.Milliseconds(), share1000: 1000, after: s.cfg.LateMaxAfter.Milliseconds()}
	if sh := s.cfg.LateShare; sh > 0 && sh < 1 {
		l.share1000 = int64(sh * 1000)
	}
	l.shareAfter1000 = l.share1000
	if sh := s.cfg.LateShareAfter; sh > 0 && sh < 1 {
		l.shareAfter1000 = int64(sh * 1000)
	} else if sh >= 1 {
		l.shareAfter1000 = 1000
	}
	if l.after > 0 {
		l.at = s.cfg.LateSwitch.UnixMilli()
	}
	return l
}

// fillPage appends to wk.rows, comma-separated (after what it holds), up
// to limit records of the
// window in permutation order starting at position from, skipping records
// not visible at asOf and records the filters reject. It returns the rows
// written and the position after the last one scanned.
func (s *Server) fillPage(wk *worker, pl *plan, pm *perm, from, asOf int64, fs []filter, keep []string, limit int64) (rows, next int64) {
	late := s.lateness()
	j := from
	for rows < limit && j < pl.n {
		m, i := pl.locate(int64(pm.at(uint64(j))))
		j++
		key := recKey(pl.st.minuteBase(m), i)
		t := recTime(m, key)
		if late.on() && !visible(key, t, asOf, late) {
			continue
		}
		s.gen.generate(&wk.r, pl.st, key, t, asOf)
		if len(fs) > 0 && !match(&wk.r, fs) {
			continue
		}
		if len(wk.rows) > 0 {
			wk.rows = append(wk.rows, ',')
		}
		wk.rows = wk.r.appendServed(wk.rows, keep)
		rows++
	}
	return rows, j
}

// total is the true size of a result set (C3: totalRows is true even over
// the cap): arithmetic when nothing is filtered and no record of the window
// can still be in flight, else a scan of what is needed.
func (s *Server) total(ctx context.Context, pl *plan, asOf int64, fs []filter) (int64, error) {
	late := s.lateness()
	if len(fs) == 0 {
		if !late.on() || pl.end+late.most() <= asOf {
			return pl.n, nil
		}
		var hidden int64
		pl.each(floorDiv(asOf-late.most(), 60000), pl.m1, func(_ int64, _ uint32, key uint64, t int64) bool {
			if !visible(key, t, asOf, late) {
				hidden++
			}
			return true
		})
		return pl.n - hidden, nil
	}
	counts := make([]int64, runtime.GOMAXPROCS(0))
	err := s.parallelMinutes(ctx, pl.m0, pl.m1, len(counts), func(g int, wk *worker, from, to int64) {
		pl.each(from, to, func(_ int64, _ uint32, key uint64, t int64) bool {
			if late.on() && !visible(key, t, asOf, late) {
				return true
			}
			s.gen.generate(&wk.r, pl.st, key, t, asOf)
			if match(&wk.r, fs) {
				counts[g]++
			}
			return true
		})
	})
	var n int64
	for _, c := range counts {
		n += c
	}
	return n, err
}

// parallelMinutes runs fn over hour-sized chunks of the minutes [m0, m1) on
// up to workers goroutines; g identifies the goroutine (for per-goroutine
// results). It stops early, with ctx's error, when ctx ends.
func (s *Server) parallelMinutes(ctx context.Context, m0, m1 int64, workers int, fn func(g int, wk *worker, from, to int64)) error {
	const chunk = 60
	chunks := (m1 - m0 + chunk - 1) / chunk
	workers = int(min(int64(workers), max(chunks, 1)))
	var next atomic.Int64
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wk := s.pool.Get().(*worker)
			defer s.pool.Put(wk)
			for ctx.Err() == nil {
				k := next.Add(1) - 1
				if k >= chunks {
					return
				}
				from := m0 + k*chunk
				fn(g, wk, from, min(from+chunk, m1))
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}
