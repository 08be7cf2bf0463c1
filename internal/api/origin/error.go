package origin

import "fmt"

// Error reports a URL a client refused to send credentials to (CONTRACT
// C1, C3, C6): a next-page URL or a redirect target of another origin
// (scheme, host, port) than the API's base URL and not in
// api.allowed_origins or edge.allowed_origins, or a redirect from https to
// http. It is refused before any byte is sent there; the api client wraps
// it in an *api.PermanentError, and the poller counts it as poll error
// kind "origin".
type Error struct {
	// Origin is the refused origin, normalized ("https://host:443"), or
	// the refused URL's scheme when it has no origin at all.
	Origin string
	// Home is the origin of the client's base URL.
	Home string
	// Key names the allow-list setting, "api.allowed_origins" or
	// "edge.allowed_origins".
	Key string
	// Redirect is set when the URL was a redirect target.
	Redirect bool
	// Downgrade is set for a redirect from https to http, refused even to
	// an allowed origin: the bearer token would travel in clear text.
	Downgrade bool
}

// Error says which origin was refused and where the credentials may go;
// it never holds a URL's path, query or user info.
func (e *Error) Error() string {
	what := "next-page URL"
	if e.Redirect {
		what = "redirect"
	}
	if e.Downgrade {
		return fmt.Sprintf("%s from https to %s refused: credentials never travel in clear text", what, e.Origin)
	}
	return fmt.Sprintf("%s to origin %s refused: credentials go only to %s and %s", what, e.Origin, e.Home, e.Key)
}
