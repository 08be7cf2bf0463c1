package source

import (
	"sync"
	"time"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/window"
)

// Snapshot returns the poller's progress. It is safe to call while Run
// runs.
func (p *Poller) Snapshot() Snapshot {
	s := p.st.Snapshot()
	s.SplitAt = p.splitAt()
	s.RecheckPending = p.rv.Pending()
	s.Delays, s.RecheckDense, s.RecheckCadence = p.rv.View()
	s.Backlog = p.planner().Remaining(s.Watermark, p.clk.Now(), s.Density)
	return s
}

// SetDensity seeds the learned density (rows per hour), e.g. from the
// checkpoint after a restart, so the first windows are sized well.
func (p *Poller) SetDensity(d float64) { p.st.SetDensity(d) }

// Snapshot is a poller's progress, cheap to take at any time, for the
// state command, logs and an ETA.
type Snapshot struct {
	// Stream is the poller's stream.
	Stream record.Stream
	// Watermark is the cursor's watermark as last emitted (not
	// necessarily acknowledged downstream).
	Watermark time.Time
	// InFlight is the chain being walked, nil between windows.
	InFlight *cursor.Chain
	// Density is the learned rows per hour, 0 when unknown.
	Density float64
	// Backlog estimates the windows, rows and requests left.
	Backlog window.Backlog
	// CaughtUp is set while the stream has nothing to ask before now - lag.
	CaughtUp bool
	// Started is when Run began, StartWatermark the watermark then.
	Started, StartWatermark time.Time
	// Pages counts the fresh pages Run emitted (a page emitted in several
	// batches, see PollerConfig.MaxBatchRecords, counts once); Rows the
	// records of them the once filter kept (Poller.Learner), 0 when
	// nothing filters (an Output other than the pipeline's).
	Pages, Rows int64
	// PageRowsSeen is the most records the API sent in one page of the
	// stream, 0 before the first; the poller reserves room for that many
	// (at least page_rows, at most MaxBatchRecords) before each fetch.
	PageRowsSeen int
	// Errors counts failed polls; LastError is the latest, scrubbed of
	// credentials like every error of the package.
	Errors      int64
	LastError   string
	LastErrorAt time.Time
	// Limits are the server's paging limits learnt so far (C3).
	Limits window.Limits
	// SplitAt is the row count from which a first page splits its window:
	// min(api.result_cap, full page size seen x api.max_pages).
	SplitAt int64
	// Blocked is set while the stream's requests are refused with an
	// error a retry cannot cure (C5: 400, 403, 404 but a next-page expiry,
	// 405, 409; an origin refused): the stream is asked again only every
	// api.permanent_error_retry. BlockedReason is one of api.PermanentReasons,
	// BlockedError the error (scrubbed of credentials), BlockedSince when
	// it began.
	Blocked       bool
	BlockedReason string
	BlockedError  string
	BlockedSince  time.Time
	// RecheckPending is how many logged windows have a recheck due
	// (package recheck): the backlog of rechecks.
	RecheckPending int
	// Delays are what the stream learnt of the platform's delays;
	// RecheckDense and RecheckCadence the sweep of recent windows they
	// give (recheck: auto; 0 with fixed points).
	Delays                       cursor.Delays
	RecheckDense, RecheckCadence time.Duration
	// Cadence is how often the stream asks for its newest records once
	// caught up, and what bounds it (the budget, the floor or a
	// configured interval).
	Cadence Cadence
}

// ETA estimates the time until the stream catches up, from how fast its
// watermark moved since Run started. It returns false while no progress
// was seen yet.
func (s Snapshot) ETA(now time.Time) (time.Duration, bool) {
	if s.CaughtUp {
		return 0, true
	}
	moved := s.Watermark.Sub(s.StartWatermark)
	el := now.Sub(s.Started)
	if moved <= 0 || el <= 0 {
		return 0, false
	}
	return time.Duration(float64(s.Backlog.Behind) / float64(moved) * float64(el)), true
}

// state keeps a poller's Snapshot as its run moves: the run writes it,
// and anyone may read it at any time. It is safe for concurrent use.
type state struct {
	mu   sync.Mutex
	snap Snapshot
}

// newState returns the state of a poller of stream s.
func newState(s record.Stream) *state {
	return &state{snap: Snapshot{Stream: s}}
}

// Snapshot returns a copy of the snapshot as it stands; Backlog and
// SplitAt are the poller's to fill.
func (st *state) Snapshot() Snapshot {
	st.mu.Lock()
	defer st.mu.Unlock()
	s := st.snap
	if s.InFlight != nil {
		c := *s.InFlight
		s.InFlight = &c
	}
	return s
}

// Begin notes a Run that starts at now from cursor c.
func (st *state) Begin(now time.Time, c cursor.Cursor) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.snap.Started, st.snap.StartWatermark = now, c.Watermark
	st.snap.Watermark, st.snap.InFlight = c.Watermark, c.InFlight
	st.snap.CaughtUp = false
}

// Emitted notes a batch of a fresh page emitted; last marks the last
// batch of a page, whose cursor c then holds.
func (st *state) Emitted(c cursor.Cursor, last bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.snap.CaughtUp = false
	if last {
		st.snap.Watermark, st.snap.InFlight = c.Watermark, c.InFlight
		st.snap.Pages++
	}
}

// Kept notes rows of a fresh page that the once filter kept.
func (st *state) Kept(rows int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.snap.Rows += int64(rows)
}

// PageRowsSeen is the most records a page of the stream held so far.
func (st *state) PageRowsSeen() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.snap.PageRowsSeen
}

// SawPageRows notes a page of rows records and reports whether it is the
// largest seen so far.
func (st *state) SawPageRows(rows int) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	grew := rows > st.snap.PageRowsSeen
	if grew {
		st.snap.PageRowsSeen = rows
	}
	return grew
}

// SetCaughtUp sets CaughtUp.
func (st *state) SetCaughtUp(v bool) {
	st.mu.Lock()
	st.snap.CaughtUp = v
	st.mu.Unlock()
}

// NoteError notes a failed poll at at.
func (st *state) NoteError(err error, at time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.snap.Errors++
	st.snap.LastError = err.Error()
	st.snap.LastErrorAt = at
}

// Density is the learnt rows per hour, 0 when unknown.
func (st *state) Density() float64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.snap.Density
}

// SetDensity sets the learnt rows per hour.
func (st *state) SetDensity(d float64) {
	st.mu.Lock()
	st.snap.Density = d
	st.mu.Unlock()
}

// Limits returns the paging limits learnt so far.
func (st *state) Limits() window.Limits {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.snap.Limits
}

// Learn changes the learnt limits with f and returns what f returns:
// whether it changed them.
func (st *state) Learn(f func(*window.Limits) bool) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return f(&st.snap.Limits)
}

// Block marks the stream blocked for reason with the message msg, since
// now() unless it was blocked already, and returns the reason it was
// blocked for before and whether it was.
func (st *state) Block(reason, msg string, now func() time.Time) (prev string, was bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	prev, was = st.snap.BlockedReason, st.snap.Blocked
	st.snap.Blocked, st.snap.BlockedReason, st.snap.BlockedError = true, reason, msg
	if !was {
		st.snap.BlockedSince = now()
	}
	return prev, was
}

// Unblock clears a block and returns the reason it was blocked for and
// whether it was.
func (st *state) Unblock() (reason string, was bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	reason, was = st.snap.BlockedReason, st.snap.Blocked
	st.snap.Blocked, st.snap.BlockedReason, st.snap.BlockedError, st.snap.BlockedSince = false, "", "", time.Time{}
	return reason, was
}

// SetCadence sets the stream's cadence.
func (st *state) SetCadence(c Cadence) {
	st.mu.Lock()
	st.snap.Cadence = c
	st.mu.Unlock()
}

// Cadence is the stream's cadence as last set.
func (st *state) Cadence() Cadence {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.snap.Cadence
}
