package source

import (
	"context"
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/window"
)

// Chain is a window whose next-page chain is being walked (CONTRACT C3). It
// is what the checkpoint stores as the window in flight, so that after a
// restart the walk continues from NextURL while the URL is still valid.
type Chain struct {
	// Window is the window being walked.
	Window window.Window
	// NextURL is the next page to fetch; empty when the next step is the
	// window's first page.
	NextURL string
	// Started is when the chain's first page was served; next-page URLs
	// expire a fixed time after it (24 h by default).
	Started time.Time
	// Pages and Rows count what was delivered of the chain so far.
	Pages int
	Rows  int64
}

// Cursor is where a stream stands: everything before Watermark is delivered;
// InFlight, if not nil, is the chain that was walked last.
type Cursor struct {
	Watermark time.Time
	InFlight  *Chain
	// Density is the observed rows per hour of the stream, so that window
	// sizing survives a restart; 0 when unknown.
	Density float64
}

// Page is one page of a result set turned into envelopes, with the cursor
// that holds once the page and every earlier page of the stream are
// delivered.
type Page struct {
	// Source and Account name the stream.
	Source, Account string
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
}

// Emit hands a page to the pipeline. It blocks while the pipeline is full and
// returns ctx's error when ctx ends first.
type Emit func(ctx context.Context, p Page) error

// Reserve blocks until the pipeline has room for a page of up to rows
// records and holds that room for the stream's next Emit, so that a page is
// counted against the pipeline's bound before it is fetched. It returns ctx's
// error when ctx ends first.
type Reserve func(ctx context.Context, rows int) error
