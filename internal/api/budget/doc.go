// Package budget is the collector's local model of the API's rate limits
// (CONTRACT C4): one token bucket per (user, functionality), shared by
// every account and source that spends it, refilled at the configured
// rate less a reserve left to the user's other clients, and corrected
// from the RateLimit-* headers of every answer (Headers), so that a
// healthy collector sees no 429. When tokens are scarce, waiters are
// served by Priority: fresh windows before backfill, accounts in turn,
// the newest window first.
//
// A bucket's Rate is its limit as the server last said it (RateLimit-Limit)
// or as configured; Rate.Pace is how often a round of the polls that share
// a bucket may come, counted in the requests they make (an edge_alerts
// poll makes two), so that together they spend what it refills after the
// reserve and what is set aside (the pollers' cadence, package source).
//
// It owns only the buckets. The API client spends it through the small
// interface api.Budget (Acquire, Done with the answer's headers, Period);
// it reports what it measures to an Observer (api.Metrics). It imports no
// package of the collector.
package budget
