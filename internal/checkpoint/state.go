package checkpoint

import "time"

// InFlight is the window whose next-page chain was being walked.
type InFlight struct {
	Start, End   time.Time
	NextURL      string
	ChainStarted time.Time
	Pages        int
	Rows         int64
	// Total is the first page's totalRows; 0 when unknown (a checkpoint
	// written before it was kept).
	Total int64
}

// State is what is stored for one stream.
type State struct {
	// Watermark: every record with a time before it was acknowledged.
	Watermark time.Time
	// InFlight is the window in flight, nil when none.
	InFlight *InFlight
	// Delivered counts the records acknowledged for the stream over its life.
	Delivered int64
	// Density is the last observed rows per hour, for window sizing after a
	// restart; 0 when unknown.
	Density float64
	// Updated is when the state was last committed.
	Updated time.Time
}
