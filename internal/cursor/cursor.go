package cursor

import (
	"time"

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
	// that they can survive a restart; the zero Limits knows nothing. A
	// poller takes those it has not learnt itself.
	Limits window.Limits
	// Log and Alerts are the stream's window log and alert marks as last
	// committed; a poller reads them once at its start (a Page's After
	// leaves them nil).
	Log    []LoggedWindow
	Alerts map[string]AlertMark
}
