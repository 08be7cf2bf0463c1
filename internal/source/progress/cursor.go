package progress

import (
	"context"
	"time"

	"github.com/svcexport/collector/internal/recheck"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source/revisit"
	"github.com/svcexport/collector/internal/window"
)

// Chain is a window whose next-page chain is being walked (CONTRACT C3). It
// is what the checkpoint stores as the window in flight, so that after a
// restart the walk continues from NextURL while the URL is still valid.
type Chain struct {
	// Window is the window being walked.
	Window window.Window
	// NextURL is the next page to fetch; empty when the next step is the
	// window's first page (a window that could not be finished as asked
	// is asked again from its first page, in parts, C3).
	NextURL string
	// Started is when the chain's first page was served; next-page URLs
	// expire a fixed time after it (24 h by default).
	Started time.Time
	// Pages and Rows count what was delivered of the chain so far.
	Pages int
	Rows  int64
	// Total is the first page's totalRows, 0 when unknown: a chain that
	// ends with fewer rows was cut by the server (C3), also after a
	// restart resumed it.
	Total int64
}

// Cursor is where a stream stands: everything before Watermark is delivered;
// InFlight, if not nil, is the chain that was walked last.
type Cursor struct {
	Watermark time.Time
	InFlight  *Chain
	// Density is the observed rows per hour of the stream, so that window
	// sizing survives a restart; 0 when unknown.
	Density float64
	// Limits are the server's paging limits the stream learnt (C3), so
	// that they can survive a restart; the zero Limits knows nothing. Run
	// takes those its poller has not learnt itself.
	Limits Limits
	// Log and Alerts are the stream's window log and alert marks as last
	// committed; Run reads them once at its start (a Page's After leaves
	// them nil).
	Log    []recheck.Window
	Alerts map[string]revisit.AlertMark
}

// Page is one page of a result set turned into envelopes, with the cursor
// that holds once the page and every earlier page of the stream are
// delivered.
type Page struct {
	// Stream is the stream the page belongs to.
	Stream record.Stream
	// Window is the window the page belongs to.
	Window window.Window
	// Index is the page's position in its chain, from 0.
	Index int
	// Envelopes are the page's records; empty for an empty window.
	Envelopes []record.Envelope
	// After is the cursor once this page is delivered. When the page is the
	// last of its window, After.Watermark is the window's end and
	// After.InFlight is nil.
	After Cursor
	// Revisit marks pages of a re-asked period (edge alert updates): they
	// carry records but do not move the cursor.
	Revisit bool
	// FetchedAt is when the page arrived.
	FetchedAt time.Time
	// Log, when not nil, changes the window log and alert marks once
	// the page is delivered.
	Log *revisit.LogChanges
}

// Output is where a poller's pages go: the pipeline gives each poller one
// of its own, which keeps that stream's reservation. Run calls it from its
// goroutine only, in order: Reserve before every fetch, Emit for every page.
type Output interface {
	// Reserve blocks until there is room for a page of up to rows records
	// and holds that room for the stream's next Emit, so that a page is
	// counted against the pipeline's bound before it is fetched (DESIGN
	// item 5). It returns ctx's error when ctx ends first.
	Reserve(ctx context.Context, rows int) error
	// Emit hands a page on. It blocks while the pipeline is full and
	// returns ctx's error when ctx ends first; any error ends Run.
	Emit(ctx context.Context, p Page) error
}

// EmitFunc is an Output that hands every page to the function and reserves
// nothing: for consumers without a bound of their own (tools, tests,
// benchmarks).
type EmitFunc func(ctx context.Context, p Page) error

// Reserve reserves nothing and returns nil.
func (EmitFunc) Reserve(context.Context, int) error { return nil }

// Emit calls f.
func (f EmitFunc) Emit(ctx context.Context, p Page) error { return f(ctx, p) }
