// Package source pulls records from the platform: one poller per account
// and source, window after window, that walks each result set's pages and
// turns them into batches of envelopes (C3, C6, C7). It asks the APIs
// through package api (tokens, headers, retries, the rate budget), learns
// what to poll from package catalog (the sources, their settings and
// requests) and reads answers with package pagescan.
//
// It never imports the sinks, the checkpoint, the pipeline or the
// configuration loader: the pipeline hands a poller its cursor.Cursor and
// an Output at start; the poller reserves room through Output.Reserve
// before each fetch and hands cursor.Pages to Output.Emit, each page
// carrying its record.Batch and the cursor that holds once it is
// delivered. The values of a stream's progress (package cursor) are the
// ones the pipeline passes on and the checkpoint stores: this package
// produces them and re-exports none.
//
// Building: Resolve is the one place the configuration becomes streams: a
// PollerConfig per stream with everything the configuration says of it
// (spec, account, the source's settings, the API and edge sections, the
// recheck configuration). Build validates a catalog.Config, makes one
// process-wide budget (or uses the one given), the core and edge
// api.Clients and one Poller per stream of Resolve; Streams lists those
// streams without credentials or clients. Each Poller's Run(ctx, from, out) is started in its own
// goroutine; Poller.Snapshot reports progress at any time.
//
// Start reading at Poller.Run: a run is a loop of steps (a fresh window,
// a chain resumed, a recheck of the window log or of alerts, an inventory
// walk of agent_info's current agents), each asking the API and emitting
// pages. What a stream learnt of the server (Limits)
// travels with its cursor. A poller emits every record it fetched: the
// pipeline's re-ask filter leaves out what the stream holds already
// (once, C7) and tells the stream's learner (Poller.Learner) what a page
// added; a recheck reads the delivered counts it narrows with through
// recheck.Counts (PollerConfig.RecheckCounts). Nothing of the checkpoint
// is read through Output. Sub-packages, each
// a seam with its own job
// and tests: catalog (the sources and their configuration), pagescan
// (reading answers), alerttrack (the alert marks), access (ProbeAccess
// for the check command).
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
// A caught-up stream polls once per cadence (Poller.Run): with
// sources.*.interval auto, the default, its share of its bucket after the
// reserve and the recheck share (budget.Rate.Pace, with the limit the
// server says and the requests a poll of every stream of the
// functionality makes, which its recheck.Limiter counts: catalog.Spec.
// PollRequests, kept right across configuration reloads by Set.Update),
// never below MinCadence; a configured interval as it is. Snapshot.Cadence
// and collector_poll_cadence_seconds show it; the rechecks run in the
// wait between polls.
//
// Only the api.Client retries a request (C5); the Poller backs off after a
// failed poll and asks again, it never skips a window.
package source
