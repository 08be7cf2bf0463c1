package cursor

import (
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/window"
)

// Page is one page of a result set (or a bounded part of one) as the
// poller hands it on: its records, already the Batch the sinks write, with
// the cursor that holds once the page and every earlier page of the stream
// are delivered (STYLE item 4: the checkpoint update travels with the
// records).
type Page struct {
	// Batch is what the sinks write: the stream, window and index of the
	// page and its envelopes (empty for an empty window). Its Seq is the
	// pipeline's to assign.
	Batch record.Batch
	// After is the cursor once this page is delivered. When the page is the
	// last of its window, After.Watermark is the window's end and
	// After.InFlight is nil.
	After Cursor
	// Revisit marks pages of a re-asked period (rechecks, edge alert
	// updates): they carry records but do not move the cursor.
	Revisit bool
	// FetchedAt is when the page arrived.
	FetchedAt time.Time
	// Log, when not nil, changes the window log and alert marks once
	// the page is delivered.
	Log *LogChanges
}

// Stream is the stream the page belongs to.
func (p Page) Stream() record.Stream {
	return record.Stream{Source: p.Batch.Source, Account: p.Batch.Account}
}

// Window is the window the page belongs to.
func (p Page) Window() window.Window {
	return window.Window{Start: p.Batch.WindowStart, End: p.Batch.WindowEnd}
}

// Index is the page's position in its chain, from 0.
func (p Page) Index() int { return p.Batch.Page }
