// Package source pulls records from the platform: the table of sources (C3,
// C6), the paging of result sets and one poller per account and source
// that turns pages into batches of envelopes (C7). It talks to the APIs
// through package api (tokens, headers, retries, the rate budget).
//
// It never imports the sinks, the checkpoint, the pipeline or the
// configuration loader: the pipeline hands a poller its Cursor and an
// Output at start; the poller reserves room through Output.Reserve before
// each fetch and hands Pages to Output.Emit, each page describing the
// cursor that holds once it is delivered. Streams lists the streams of a
// configuration without credentials or clients.
//
// Building: Config (koanf keys api, accounts, org_audit_logs, edge,
// sources) is validated with Config.Validate; Build makes one process-wide
// api.Budget (or uses the one given), the core and edge api.Clients and one
// Poller per (account, source). Each Poller's Run(ctx, cursor, out) is
// started in its own goroutine; Poller.Snapshot reports progress at any
// time.
//
// Files, one job each: config.go (configuration of accounts, the edge
// section and the sources), specs.go (the source table of C3 and C6),
// paging.go (first-page requests), scan.go (the page classifier: every
// answer is a page or an error), envelopes.go and badrecords.go (C7
// envelopes, flawed records), poller.go (windows, splits, chains, resume,
// bounded batches), alerts.go (edge alert updates), snapshot.go
// (progress), metrics.go, build.go.
//
// A 2xx answer is a result only when it is a 204 or a well-formed page;
// anything else is retried (C5), never taken as an empty window. Pages
// larger than PollerConfig.MaxBatchRecords are emitted in bounded batches,
// and answers over api.max_body_bytes split their window.
//
// Only the api.Client retries a request (C5); the Poller backs off after a
// failed poll and asks again, it never skips a window.
package source
