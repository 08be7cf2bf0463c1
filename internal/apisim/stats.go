package apisim

import (
	"cmp"
	"slices"
	"sync"
)

// Counter holds the counters of one (user, functionality) pair (C8). User is
// empty for requests whose bearer token could not be attributed to a user.
// Functionality is a source name of C3, "token" or "edge".
type Counter struct {
	User          string `json:"user"`
	Functionality string `json:"functionality"`
	// Requests counts every request attributed to the pair, whatever its answer.
	Requests int64 `json:"requests"`
	// RateLimited counts 429 answers.
	RateLimited int64 `json:"rate_limited"`
	// RowsServed counts records in 200 answers.
	RowsServed int64 `json:"rows_served"`
	// Pages counts 200 answers that carried records.
	Pages int64 `json:"pages"`
	// NextPage404 counts next-page requests answered 404 (expired or unknown token).
	NextPage404 int64 `json:"next_page_404"`
	// Unauthorized counts 401 answers.
	Unauthorized int64 `json:"unauthorized"`
	// Revocations counts data requests that revoked all of the user's
	// tokens (revoke_every) and were answered 401; they are counted in
	// Unauthorized too.
	Revocations int64 `json:"revocations"`
	// ServerErrors counts injected 500 and 503 answers.
	ServerErrors int64 `json:"server_errors"`
	// NoisyTokens counts tokens the noisy neighbour spent from the bucket.
	NoisyTokens int64 `json:"noisy_tokens"`
}

// Stats is the body of GET /_stats: one Counter per (user, functionality)
// pair seen so far, sorted by user then functionality.
type Stats struct {
	Counters []Counter `json:"counters"`
}

// Get returns the counters of (user, functionality), zero when never seen.
func (s Stats) Get(user, functionality string) Counter {
	for _, c := range s.Counters {
		if c.User == user && c.Functionality == functionality {
			return c
		}
	}
	return Counter{User: user, Functionality: functionality}
}

type statsTable struct {
	mu sync.Mutex
	m  map[bucketKey]*Counter
}

func newStatsTable() *statsTable { return &statsTable{m: map[bucketKey]*Counter{}} }

func (t *statsTable) add(user, fn string, f func(*Counter)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := bucketKey{user, fn}
	c := t.m[k]
	if c == nil {
		c = &Counter{User: user, Functionality: fn}
		t.m[k] = c
	}
	f(c)
}

func (t *statsTable) snapshot() Stats {
	t.mu.Lock()
	out := make([]Counter, 0, len(t.m))
	for _, c := range t.m {
		out = append(out, *c)
	}
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b Counter) int {
		return cmp.Or(cmp.Compare(a.User, b.User), cmp.Compare(a.Functionality, b.Functionality))
	})
	return Stats{Counters: out}
}
