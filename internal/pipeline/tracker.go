package pipeline

import (
	"slices"
	"sync"
	"time"

	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/window"
)

// tracker turns acknowledgements, which arrive in any order from concurrent
// sink workers, into checkpoint states that only ever cover a contiguous run
// of acknowledged pages of each stream (DESIGN item 7, STYLE item 4).
type tracker struct {
	mu      sync.Mutex
	streams map[record.Stream]*stream
	dirty   map[record.Stream]struct{}
	signal  chan struct{} // capacity 1: "something is dirty"
}

type stream struct {
	failed     bool   // stopped by a permanent error: no ack moves it any more
	nextSeq    uint64 // seq of the next emitted page
	nextCommit uint64 // seq of the oldest page not yet acknowledged
	acked      map[uint64]ackedPage
	state      checkpoint.State // as of the contiguous acknowledged run
	// logs are the log changes of the contiguous run not yet committed
	// (takeLogs).
	logs   cursor.LogChanges
	logged bool
	// committed is the seq of the oldest page the last successful commit
	// does not cover (settled, rebase).
	committed uint64
	// delivered are the delivered-set keys of the contiguous run not yet
	// committed.
	delivered []cursor.Delivered
}

type ackedPage struct {
	after     cursor.Cursor
	revisit   bool
	log       *cursor.LogChanges
	delivered []cursor.Delivered
	rows      int
}

func newTracker(initial map[record.Stream]checkpoint.State) *tracker {
	t := &tracker{streams: map[record.Stream]*stream{}, dirty: map[record.Stream]struct{}{}, signal: make(chan struct{}, 1)}
	t.load(initial)
	return t
}

// load sets the acknowledged state of every stream of initial (the
// checkpoint as Run found it).
func (t *tracker) load(initial map[record.Stream]checkpoint.State) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, st := range initial {
		t.streams[k] = &stream{acked: map[uint64]ackedPage{}, state: st}
	}
}

func (t *tracker) streamLocked(k record.Stream) *stream {
	s, ok := t.streams[k]
	if !ok {
		s = &stream{acked: map[uint64]ackedPage{}}
		t.streams[k] = s
	}
	return s
}

// next assigns the sequence number of a stream's next page.
func (t *tracker) next(k record.Stream) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.streamLocked(k)
	seq := s.nextSeq
	s.nextSeq++
	return seq
}

// ack records that every sink acknowledged page seq of stream k. The
// stream's state moves over every page that is now contiguous with the
// acknowledged run.
func (t *tracker) ack(k record.Stream, seq uint64, p ackedPage, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.streamLocked(k)
	if s.failed {
		return
	}
	s.acked[seq] = p
	moved := false
	for {
		a, ok := s.acked[s.nextCommit]
		if !ok {
			break
		}
		delete(s.acked, s.nextCommit)
		s.nextCommit++
		s.state.Delivered += int64(a.rows)
		if !a.log.Empty() {
			s.logs.Merge(*a.log)
			s.logged = true
		}
		if len(a.delivered) > 0 {
			s.delivered = append(s.delivered, a.delivered...)
			s.logged = true
		}
		s.state.Cursor = advance(s.state.Cursor, a.after, a.revisit)
		moved = true
	}
	if !moved {
		return
	}
	s.state.Updated = now
	t.dirty[k] = struct{}{}
	select {
	case t.signal <- struct{}{}:
	default:
	}
}

// advance is the cursor a stream's state holds once the page whose cursor
// is after (a revisit page when revisit) is delivered on top of cur. A
// page moves the state to its cursor whole, so that every value the
// stream learnt reaches the checkpoint, but for what the page does not
// know: a value it leaves unknown keeps the one learnt before. A revisit
// page moves nothing but the delays: rechecks are where they are learnt.
func advance(cur, after cursor.Cursor, revisit bool) cursor.Cursor {
	if revisit {
		if !after.Delays.Empty() {
			cur.Delays = after.Delays.Clone()
		}
		return cur
	}
	// The state owns its copy, whatever the producer does with its own;
	// the logs travel apart (LogChanges).
	next := after.Clone()
	next.Log, next.Alerts = nil, nil
	if !(next.Density > 0) { // 0 or NaN: unknown
		next.Density = cur.Density
	}
	if next.Delays.Empty() {
		next.Delays = cur.Delays
	}
	if next.Limits == (window.Limits{}) {
		next.Limits = cur.Limits
	}
	if next.Start.IsZero() {
		next.Start = cur.Start
	}
	return next
}

// fail stops stream k: acknowledgements of its pages are ignored from now
// on and those waiting for an earlier page are forgotten, so that its
// state stays what the contiguous run before the failure made it.
func (t *tracker) fail(k record.Stream) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.streamLocked(k)
	s.failed = true
	clear(s.acked)
}

// takeDirty returns the states changed since the last call and forgets
// them; putBack returns them after a failed commit.
func (t *tracker) takeDirty() map[record.Stream]checkpoint.State {
	out, _ := t.takeDirtyNext()
	return out
}

// takeDirtyNext is takeDirty that also returns, per stream, the seq of
// its oldest page the states do not cover: once they are committed, every
// page of the stream below it is (sink.CommitObserver).
func (t *tracker) takeDirtyNext() (map[record.Stream]checkpoint.State, map[record.Stream]uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.dirty) == 0 {
		return nil, nil
	}
	out := make(map[record.Stream]checkpoint.State, len(t.dirty))
	next := make(map[record.Stream]uint64, len(t.dirty))
	for k := range t.dirty {
		out[k] = t.streams[k].state
		next[k] = t.streams[k].nextCommit
		delete(t.dirty, k)
	}
	return out, next
}

func (t *tracker) putBack(states map[record.Stream]checkpoint.State) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range states {
		t.dirty[k] = struct{}{}
	}
}

// states returns a copy of every stream's acknowledged state.
func (t *tracker) states() map[record.Stream]checkpoint.State {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[record.Stream]checkpoint.State, len(t.streams))
	for k, s := range t.streams {
		out[k] = s.state
	}
	return out
}

// takeLogs returns the log changes of the acknowledged runs since the
// last call and forgets them; putBackLogs returns them after a failed
// commit, before any change made since.
func (t *tracker) takeLogs() checkpoint.Changes {
	t.mu.Lock()
	defer t.mu.Unlock()
	var c checkpoint.Changes
	for k, s := range t.streams {
		if !s.logged {
			continue
		}
		if c.Windows == nil {
			c.Windows = map[record.Stream]cursor.WindowChanges{}
			c.Alerts = map[record.Stream]cursor.AlertChanges{}
		}
		c.Windows[k], c.Alerts[k] = s.logs.Windows, s.logs.Alerts
		if len(s.delivered) > 0 {
			if c.Delivered == nil {
				c.Delivered = map[record.Stream][]cursor.Delivered{}
			}
			c.Delivered[k] = s.delivered
		}
		s.logs, s.logged, s.delivered = cursor.LogChanges{}, false, nil
	}
	return c
}

func (t *tracker) putBackLogs(c checkpoint.Changes) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, w := range c.Windows {
		s := t.streamLocked(k)
		l := cursor.LogChanges{Windows: w, Alerts: c.Alerts[k]}
		l.Merge(s.logs)
		s.logs, s.logged = l, true
	}
	for k, d := range c.Delivered {
		s := t.streamLocked(k)
		s.delivered = append(slices.Clip(d), s.delivered...)
		s.logged = true
	}
}

// setCommitted records that the commit of the states taken with next
// succeeded: every page of stream k below next[k] is committed.
func (t *tracker) setCommitted(next map[record.Stream]uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, n := range next {
		if s := t.streamLocked(k); n > s.committed {
			s.committed = n
		}
	}
}

// stateOf returns stream k's acknowledged state (zero when unknown).
func (t *tracker) stateOf(k record.Stream) checkpoint.State {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.streams[k]; ok {
		return s.state
	}
	return checkpoint.State{}
}

// settled reports whether stream k's acknowledged run is committed: no
// state or log of it waits for a commit.
func (t *tracker) settled(k record.Stream) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.streams[k]
	if !ok {
		return true
	}
	_, dirty := t.dirty[k]
	return !dirty && !s.logged && s.committed >= s.nextCommit
}

// rebase readies stream k for a new producer (Pipeline.Add) once the
// one before settled: acknowledgements of its pages that were waiting
// for a page no sink will acknowledge any more (abandoned when it
// stopped) are forgotten, as a restart forgets them, so that the new
// producer's pages, numbered on from the last one, commit from the
// state as committed.
func (t *tracker) rebase(k record.Stream) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.streamLocked(k)
	clear(s.acked)
	s.nextCommit = s.nextSeq
	s.committed = max(s.committed, s.nextSeq)
}
