package source

import (
	"github.com/svcexport/collector/internal/source/progress"
	"github.com/svcexport/collector/internal/source/revisit"
)

// The values a poller hands on are package progress's (the cursor and
// the pages that move it) and package revisit's (the log changes a page
// carries); these names are the ones the pipeline and the tools use.
type (
	// Chain is a window whose next-page chain is being walked
	// (progress.Chain).
	Chain = progress.Chain
	// Cursor is where a stream stands (progress.Cursor).
	Cursor = progress.Cursor
	// Page is one page of a result set turned into envelopes, with the
	// cursor that holds once it is delivered (progress.Page).
	Page = progress.Page
	// Output is where a poller's pages go (progress.Output).
	Output = progress.Output
	// EmitFunc is an Output that hands every page to the function and
	// reserves nothing (progress.EmitFunc).
	EmitFunc = progress.EmitFunc
	// AlertMark is what an edge alert stream remembers of one alert
	// across restarts (revisit.AlertMark).
	AlertMark = revisit.AlertMark
	// LogChanges are the changes to a stream's window log and alert
	// marks that a page carries (revisit.LogChanges).
	LogChanges = revisit.LogChanges
	// Snapshot is a poller's progress (progress.Snapshot).
	Snapshot = progress.Snapshot
)
