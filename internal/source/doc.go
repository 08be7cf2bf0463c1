// Package source pulls records from the platform: the API client (tokens,
// account headers, timeouts, retries), the rate budget shared per user and
// functionality (CONTRACT C4), the paging of result sets (C3, C6) and one
// poller per account and source that turns pages into batches of envelopes.
//
// It never imports the sinks or the checkpoint: the pipeline hands a poller
// its Cursor at start and receives Pages through an Emit function, each page
// describing the cursor that holds once it is delivered.
//
// Building: Config (koanf keys api, accounts, org_audit_logs, edge,
// sources) is validated with Config.Validate; Build makes one process-wide
// Budget (or uses the one given), the core and edge Clients and one Poller
// per (account, source). Each Poller's Run(ctx, cursor, emit) is started in
// its own goroutine; Poller.Snapshot reports progress at any time.
//
// Files, one job each: config.go (configuration), specs.go (the source
// table of C3 and C6), client.go and token.go (HTTP, retries, bearer
// tokens), origin.go (where credentials may go: origins, redirects, user
// info scrubbing), errors.go (error classes), headers.go and budget.go
// (RateLimit headers, token buckets), paging.go (first-page requests),
// scan.go (the page classifier: every answer is a page or an error),
// envelopes.go and badrecords.go (C7 envelopes, flawed records), poller.go
// (windows, splits, chains, resume, bounded batches), alerts.go (edge
// alert updates), snapshot.go (progress), ratelog.go (rate-limited
// warnings), metrics.go, build.go.
//
// Credentials go only to the origin of the base URL and to the configured
// allowed_origins (C1, C3, C6): another origin in a next-page URL or a
// redirect, or a redirect from https to http, is refused before a request.
// A 2xx answer is a result only when it is a 204 or a well-formed page;
// anything else is retried (C5), never taken as an empty window. Pages
// larger than PollerConfig.MaxBatchRecords are emitted in bounded batches,
// and answers over api.max_body_bytes split their window.
//
// Only the Client retries a request (C5); the Poller backs off after a
// failed poll and asks again, it never skips a window.
package source
