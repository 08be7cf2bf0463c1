package apisim

import (
	"slices"
	"sync"
	"time"
)

// EdgeQuery is one edge request the simulator answered with data (C6): the
// source asked, its window [Start, End) and the rows served. Full is true
// when the answer held edge_max_rows rows, which C6 tells a collector to
// take as truncated, so that it splits the window and asks again.
type EdgeQuery struct {
	Source     string
	Start, End time.Time
	Rows       int64
	Full       bool
}

// edgeLogCap bounds the edge query log: a demo simulator that runs for
// months keeps only the newest queries.
const edgeLogCap = 10000

type edgeLog struct {
	mu sync.Mutex
	qs []EdgeQuery
}

func (l *edgeLog) add(q EdgeQuery) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.qs) >= edgeLogCap {
		l.qs = slices.Delete(l.qs, 0, edgeLogCap/2)
	}
	l.qs = append(l.qs, q)
}

func (l *edgeLog) snapshot() []EdgeQuery {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.qs)
}

// EdgeQueries returns the edge requests answered with data so far (at most
// the newest 10,000), oldest first: what each asked and how much it got.
// Tests use it to tell a window asked twice from one asked again after a
// full (truncated, C6) answer, which request counts alone cannot.
func (s *Server) EdgeQueries() []EdgeQuery { return s.edges.snapshot() }
