// Package apisim is the project's simulator of the platform's core API v2
// and edge API (CONTRACT C1-C8). Every test, the demo and every benchmark of
// the collector talks to it, so it is strict where the real API is strict.
//
// What it owns:
//   - the endpoints: POST /api/v2/access/tokens (C1); the seven searches of
//     C3 (POST .../search and GET /api/v2/CloudActivities) with their
//     next-page URLs (GET {search path}/pages/{token}); the edge API under
//     /edge (GET /edge/api/v1/audit_events and /edge/api/v1/alerts, C6);
//     and, without authentication, GET /_truth and GET /_stats (C8);
//   - synthetic, deterministic data: each (source, account) stream holds a
//     number of records per minute that is a pure function of (seed,
//     stream, minute), with a daily wave and bursts; any window's size is
//     arithmetic, any page is generated alone, in constant memory;
//   - each account's fleet of agents, whose states change at seeded
//     moments: what an agent_info search without timeFilter answers (the
//     collector's inventory walk), and Fleet, its truth at any time;
//   - every limit of the seed and the contract, and the faults of C1, C3
//     and C5 (5xx, noisy neighbour, token revocation, slow and cut-off
//     responses, late data), each switchable in Config; and the ways a real
//     service may differ from the collector's configuration: another page
//     size, result cap or next-page life, a capped totalRows
//     (total_rows_cap), keys with narrower permissions than their role
//     (KeyConfig.AllowedAccounts, NoOrgAccess: 403 for the rest).
//
// Credentials change while it runs, as a real platform's do: SetKeySecret
// rotates a key's secret, RevokeTokens revokes a user's tokens and
// SetEdgeToken replaces the edge token, so that tests can rotate a
// collector's secret files under it. EdgeQueries says what each edge
// request asked and whether its answer was full (C6), bounded to the
// newest 10,000, so that a test tells a window asked twice from one split.
//
// The edge API has no account selection (C6): an answer holds the records
// of every account of the organization, each naming its own in
// account_name, and Account-Name is ignored. Each (edge source, account)
// is still a stream of its own, so /_truth for an edge source and an
// account counts the records whose account_name is that account.
//
// Ids: the ground truth hashes each record's canonical form with
// record.IDOfCanonical; records are served in a non-canonical form (keys in
// the seed's order, some \u escapes) whose record.ID is the same id.
//
// Order of checks on a core data request: route (404, 405), bearer (401),
// rate bucket (429; from here on the request spent a token and carries
// RateLimit-* headers), revocation fault (401), Org-Access and Account-Name
// (400, 403), Content-Type, body size and body (400), injected 5xx, then
// the answer (slow or cut off when those faults hit).
//
// Next-page tokens are stateless: HMAC-signed, they carry the query, the
// chain's snapshot time (the first page's time: the chain sees the data as
// of then, and its URLs expire next_page_ttl after it), the scan cursor in
// the window's permutation and the true totalRows.
//
// GET /_stats answers the Stats type as JSON:
//
//	{"counters": [{"user": "sim-admin", "functionality": "dns",
//	  "requests": 12, "rate_limited": 0, "rows_served": 55000, "pages": 11,
//	  "next_page_404": 0, "unauthorized": 1, "server_errors": 0,
//	  "noisy_tokens": 0}, ...]}
//
// one entry per (user, functionality) seen, sorted; functionality is a
// source name of C3, "token" (token endpoint) or "edge" (user "edge");
// user is "" for requests whose bearer could not be attributed.
//
// GET /_truth?source=S&account=A&start=T&end=T (T in RFC 3339) answers
// {"count": N, "xor": "<64 hex>"}; organization-level audit logs are
// account "org".
//
// The package must not import other internal packages but internal/record.
package apisim
