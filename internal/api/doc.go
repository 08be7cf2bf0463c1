// Package api talks to the platform's two APIs, core and edge (CONTRACT
// C1-C6): bearer tokens (renewed before expiresAt and once on a 401), the
// Account-Name and Org-Access headers, timeouts, bounded bodies, the one
// layer of retries of the collector with capped exponential backoff and
// jitter, and the rate budget: one token bucket per (user, functionality),
// shared by every account and source that spends it, synced from the
// RateLimit-* headers of every answer, serving fresh windows first and
// accounts in turn.
//
// It owns the koanf section "api" (Config), the connection part of the
// section "edge" (EdgeConfig; package source owns the section and hands
// this part over) and the API's metrics (Metrics). It knows nothing of
// windows, pages, envelopes or streams: a Request says what to send, which
// bucket it spends and with which Priority, and its Decode says whether an
// answer is usable. It imports no other package of the collector but
// record, secret, backoff and ratelog, and never a sink, the checkpoint,
// the pipeline or the configuration loader.
//
// Files, one job each: config.go (configuration), client.go (requests and
// retries), token.go (bearer tokens), origin.go (where credentials may go:
// origins, redirects, user info scrubbing), errors.go (error classes),
// headers.go and budget.go (RateLimit headers, token buckets), clock.go,
// metrics.go.
//
// Credentials go only to the origin of the base URL and to the configured
// allowed_origins (C1, C3, C6): another origin in a next-page URL or a
// redirect, or a redirect from https to http, is refused before a request.
package api
