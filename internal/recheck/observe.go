package recheck

import (
	"context"
	"time"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// Observer is a stream's learner of the platform's delays (recheck: auto,
// ObserveFresh and ObserveLate): it learns from the records a page really
// added, those the once filter kept (CONTRACT C7: a record asked again
// and delivered before teaches nothing). The filter sits between the
// poller and the sinks (package pipeline); it hands each page's kept
// records to the stream's Observer on the goroutine that emitted the
// page, before the page goes on, and the page's cursor then carries the
// Observer's Delays, so that the checkpoint keeps what the page taught.
type Observer interface {
	// ObserveFresh counts n records a fresh page (not a revisit) added,
	// received at received.
	ObserveFresh(n int, received time.Time)
	// ObserveLate learns from kept, the records a recheck recovered
	// (late records, not alert updates), received at received. kept is
	// read-only and not kept.
	ObserveLate(kept []record.Envelope, received time.Time)
	// Delays returns a copy of what the stream learnt (empty when it
	// does not learn): the cursor of the page being emitted carries it.
	Delays() cursor.Delays
}

// Counts is where a recheck reads how many records of a stream's
// delivered set (committed to every sink) lie in each minute of record
// time: a grown window is narrowed below its bounds with them
// (Refetch.NarrowWindow). checkpoint.DB is one; the app hands it to the
// pollers when it builds them.
type Counts interface {
	// DeliveredCounts returns how many records of stream k's delivered
	// set lie in each minute of record time that [from, to) touches, cut
	// to [from, to). A count too small only costs a range fetched again.
	DeliveredCounts(ctx context.Context, k record.Stream, from, to time.Time) ([]int64, error)
}
