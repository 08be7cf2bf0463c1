package cursor

import "time"

// DelayBounds are the upper bounds of the buckets of Delays.Late: how long
// after its record time a late record was found (the last bucket holds
// what was found later than every bound).
var DelayBounds = []time.Duration{
	30 * time.Second, time.Minute, 2 * time.Minute, 3 * time.Minute, 5 * time.Minute, 7 * time.Minute,
	10 * time.Minute, 15 * time.Minute, 20 * time.Minute, 30 * time.Minute, 45 * time.Minute, time.Hour,
	2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

// Delays is what a stream learnt of the platform's ingestion delays (C3: a
// record may become visible minutes to hours after its time): the records
// its rechecks recovered, by how long after their record time they were
// found, and the records the first fetch of their window held. Counts
// decay with time (package recheck), so that the platform's recent
// behaviour counts most. It travels with the cursor, so that a restart
// keeps what was learnt. The zero Delays knows nothing.
type Delays struct {
	// Late[i] is the (decayed) count of recovered records found at most
	// DelayBounds[i] after their record time, and more than the bound
	// before; Late[len(DelayBounds)] those found later still. Nil when
	// none was.
	Late []float64 `json:"late,omitempty"`
	// Fresh is the (decayed) count of records the first fetch of their
	// window held.
	Fresh float64 `json:"fresh,omitempty"`
	// At is when the counts were last decayed.
	At time.Time `json:"at,omitzero"`
}

// Empty reports whether d holds no observation.
func (d Delays) Empty() bool { return d.Fresh == 0 && len(d.Late) == 0 }

// Clone returns a copy of d that shares nothing with it.
func (d Delays) Clone() Delays {
	if d.Late != nil {
		d.Late = append([]float64(nil), d.Late...)
	}
	return d
}
