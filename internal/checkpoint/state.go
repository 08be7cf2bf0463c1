package checkpoint

import (
	"github.com/svcexport/collector/internal/cursor"
	"time"
)

// State is what is stored for one stream.
type State struct {
	// Watermark: every record with a time before it was acknowledged.
	Watermark time.Time
	// InFlight is the window in flight, nil when none.
	InFlight *cursor.Chain
	// Delivered counts the records acknowledged for the stream over its life.
	Delivered int64
	// Density is the last observed rows per hour, for window sizing after a
	// restart; 0 when unknown.
	Density float64
	// Delays are the platform's delays the stream learnt (recheck: auto),
	// so that a restart keeps them; the zero Delays knows nothing.
	Delays cursor.Delays
	// Updated is when the state was last committed.
	Updated time.Time
}
