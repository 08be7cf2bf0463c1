package source

import (
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/window"
)

// Snapshot is a poller's progress, cheap to take at any time, for the
// state command, logs and an ETA.
type Snapshot struct {
	// Stream is the poller's stream.
	Stream record.Stream
	// Watermark is the cursor's watermark as last emitted (not
	// necessarily acknowledged downstream).
	Watermark time.Time
	// InFlight is the chain being walked, nil between windows.
	InFlight *Chain
	// Density is the learned rows per hour, 0 when unknown.
	Density float64
	// Backlog estimates the windows, rows and requests left.
	Backlog window.Backlog
	// CaughtUp is set while the stream has nothing to ask before now - lag.
	CaughtUp bool
	// Started is when Run began, StartWatermark the watermark then.
	Started, StartWatermark time.Time
	// Pages and Rows count what Run emitted; a page emitted in several
	// batches (see PollerConfig.MaxBatchRecords) counts once.
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
	Limits Limits
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

// Snapshot returns the poller's progress. It is safe to call while Run
// runs.
func (p *Poller) Snapshot() Snapshot {
	p.mu.Lock()
	s := p.snap
	if s.InFlight != nil {
		c := *s.InFlight
		s.InFlight = &c
	}
	p.mu.Unlock()
	s.SplitAt = p.splitAt()
	s.RecheckPending = p.rv.Pending()
	s.Backlog = p.planner().Remaining(s.Watermark, p.clk.Now(), s.Density)
	return s
}

func (p *Poller) begin(now time.Time, c Cursor) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.snap.Started, p.snap.StartWatermark = now, c.Watermark
	p.snap.Watermark, p.snap.InFlight = c.Watermark, c.InFlight
	p.snap.CaughtUp = false
}

// delivered notes rows emitted; last marks the last batch of a page, whose
// cursor c then holds.
func (p *Poller) delivered(c Cursor, rows int, last bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.snap.Rows += int64(rows)
	p.snap.CaughtUp = false
	if last {
		p.snap.Watermark, p.snap.InFlight = c.Watermark, c.InFlight
		p.snap.Pages++
	}
}

func (p *Poller) pageRowsSeen() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.snap.PageRowsSeen
}

func (p *Poller) caughtUp(v bool) {
	p.mu.Lock()
	p.snap.CaughtUp = v
	p.mu.Unlock()
}

func (p *Poller) noteError(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.snap.Errors++
	p.snap.LastError = err.Error()
	p.snap.LastErrorAt = p.clk.Now()
}

func (p *Poller) density() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.snap.Density
}

func (p *Poller) setDensity(d float64) {
	p.mu.Lock()
	p.snap.Density = d
	p.mu.Unlock()
}

// SetDensity seeds the learned density (rows per hour), e.g. from the
// checkpoint after a restart, so the first windows are sized well.
func (p *Poller) SetDensity(d float64) { p.setDensity(d) }
