// Package api talks to the platform's two APIs, core and edge (CONTRACT
// C1-C6): bearer tokens (renewed before expiresAt and when a 401 says one
// died: once per dead token, however many requests saw it, at a pace when
// tokens keep dying unused; only the token endpoint refusing the key is an
// authentication error a retry cannot cure), the
// Account-Name and Org-Access headers, timeouts, bounded bodies, the one
// layer of retries of the collector with capped exponential backoff and
// jitter, and the rate budget: one token bucket per (user, functionality),
// shared by every account and source that spends it, synced from the
// RateLimit-* headers of every answer, serving fresh windows first and
// accounts in turn.
//
// It owns the koanf section "api" (Config), the connection part of the
// section "edge" (EdgeConfig; package catalog owns the section and hands
// this part over) and the API's metrics (Metrics). It knows nothing of
// windows, pages, envelopes or streams: a Request says what to send, which
// bucket it spends and with which budget.Priority, and its Decode says
// whether an answer is usable. It imports no other package of the
// collector but its own sub-packages, record, secret, backoff and
// ratelog, and never a sink, the checkpoint, the pipeline or the
// configuration loader.
//
// The client spends the budget through the small interface Budget
// (Acquire, Done with the answer's RateLimit headers, Period); package
// budget holds the buckets, package origin the origin checks.
//
// Secrets given as files (api.secret_file, edge.token_file) are read
// again at every token renewal and whenever the server refuses the value
// held, so that rotating the file is enough, and every value read joins
// the process's one secret.Scrubber (Options.Scrubber): no error text or
// log line of the client carries a credential, old or new, in any echo
// form. Start reading at NewClient and Client.Do.
//
// Credentials go only to the origin of the base URL and to the configured
// allowed_origins (C1, C3, C6): another origin in a next-page URL or a
// redirect, or a redirect from https to http, is refused before a request.
package api
