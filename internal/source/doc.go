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
// tokens), headers.go and budget.go (RateLimit headers, token buckets),
// paging.go (page bodies, first-page requests), envelopes.go (C7
// envelopes), poller.go (windows, splits, chains, resume), alerts.go (edge
// alert updates), snapshot.go (progress), metrics.go, build.go.
//
// Only the Client retries a request (C5); the Poller backs off after a
// failed poll and asks again, it never skips a window.
package source
