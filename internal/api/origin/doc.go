// Package origin decides where the API credentials may go (CONTRACT C1,
// C3, C6): only to the origin (scheme, host, port) of the API's base URL
// and to the configured allowed_origins. A next-page URL or a redirect to
// another origin, or a redirect from https to http, is refused with an
// *Error before any byte is sent there. It also scrubs the user info of
// URLs from every text the client shows (ScrubURLs).
//
// It owns only those checks; it imports secret (for the redaction mark)
// and nothing else of the collector.
package origin
