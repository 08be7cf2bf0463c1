// Package source pulls records from the platform: one poller per account
// and source, window after window, that walks each result set's pages and
// turns them into batches of envelopes (C3, C6, C7). It asks the APIs
// through package api (tokens, headers, retries, the rate budget), learns
// what to poll from package catalog (the sources, their settings and
// requests) and reads answers with package pagescan.
//
// It never imports the sinks, the checkpoint, the pipeline or the
// configuration loader: the pipeline hands a poller its Cursor and an
// Output at start; the poller reserves room through Output.Reserve before
// each fetch and hands Pages to Output.Emit, each page describing the
// cursor that holds once it is delivered.
//
// Building: Build validates a catalog.Config, makes one process-wide
// budget (or uses the one given), the core and edge api.Clients and one
// Poller per stream; Streams lists those streams without credentials or
// clients. Each Poller's Run(ctx, cursor, out) is started in its own
// goroutine; Poller.Snapshot reports progress at any time.
//
// Files, one job each: types.go (the names of the values it hands on),
// build.go (Build, Streams), poller.go (a poller, its run loop and
// failures), walk.go (the step of a run, requests, bounded batches),
// chain.go (windows, splits, chains, resume), limits.go (the paging limits
// learnt from the server), blocked.go (streams refused for good),
// asker.go (the run as revisit.Asker), snapshot.go (progress), metrics.go.
// Sub-packages, one job each, that this package joins: catalog (the
// sources and their configuration), pagescan (reading answers), envelope
// (C7 envelopes, flawed records), progress (Cursor, Chain, Page, Output,
// Snapshot and the State behind it), revisit (rechecks of the window log
// and alert re-asks: Revisit pages that never move the cursor), alerttrack
// (the alert marks), pollmetrics (the metrics), access (ProbeAccess for the
// check command).
//
// A window is never marked done without its records: one that cannot be
// finished as asked (a chain cut at api.max_pages with pages left, a chain
// that ended at the split threshold under a capped count, a next-page URL
// that expired before the walk ended) is asked again as parts from their
// first pages. The thresholds come from what the server showed (Limits:
// its full-page size, its count cap, its next-page life, the time a page
// takes), not only from configuration, since a real service differs from
// any default.
//
// Edge streams are one per edge token (C6 has no account selection), of
// account edge.account; each edge record's envelope names the record's own
// account (account_name).
//
// An error that repeating the request cannot cure (C5) blocks its stream:
// it leaves the fast retry loop, shows in the Snapshot, in
// collector_stream_blocked and in BlockedError (for /readyz), and is asked
// again every api.permanent_error_retry.
//
// A 2xx answer is a result only when it is a 204 or a well-formed page;
// anything else is retried (C5), never taken as an empty window. Pages
// larger than PollerConfig.MaxBatchRecords are emitted in bounded batches,
// and answers over api.max_body_bytes split their window.
//
// Only the api.Client retries a request (C5); the Poller backs off after a
// failed poll and asks again, it never skips a window.
package source
