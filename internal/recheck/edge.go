package recheck

import (
	"time"

	"github.com/svcexport/collector/internal/record"
)

// CompareEdge settles an edge unit (C6: no totalRows, so a recheck fetches
// the unit's range whole, one request while the answer is not cut, and the
// caller splits a full answer as for any edge window). got[i] is the
// digest of the ids fetched for u.Windows[i] (place each record with
// u.Index of its create_time; len(got) must be len(u.Windows)).
//
// A window whose count and digest are as stored is kept (asked at the
// unit's At); any other is a Refetch with Counted set: the caller holds its
// records already and delivers them (repeats are harmless downstream, C7),
// then stores the Update. A window whose count fell is also a Shrink.
// Requests is 1.
func (u Unit) CompareEdge(got []record.Digest) Result {
	n := &Narrowing{u: u}
	n.b.requests = 1 // the unit's one fetch
	for i, w := range u.Windows {
		var d record.Digest
		if i < len(got) {
			d = got[i]
		}
		if d.Count == w.Count && d.Hex() == w.Digest {
			n.keepAll(i, i+1)
			continue
		}
		e := w
		e.Count, e.Digest, e.FetchedAt, e.Passed = d.Count, d.Hex(), u.At, n.passed(w)
		grew := d.Count - w.Count
		if grew < 0 {
			n.res.Shrunk = append(n.res.Shrunk, Shrink{Start: w.Start, End: w.End, Before: w.Count, After: d.Count})
		} else {
			n.res.Recovered += grew
		}
		n.res.Refetch = append(n.res.Refetch, Refetch{Update: Update{Entry: e, Replaces: []time.Time{w.Start}}, Grew: grew, Counted: true})
	}
	return n.Result()
}
