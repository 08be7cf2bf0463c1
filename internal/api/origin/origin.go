package origin

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/svcexport/collector/internal/secret"
)

// originOf returns the normalized origin of u, "scheme://host:port": scheme
// and host in lower case, the default port of http (80) and https (443)
// written out, the port without leading zeros. A URL that is not http or
// https, or has no host, has no origin.
func originOf(u *url.URL) (string, bool) {
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", false
	}
	port := u.Port()
	switch {
	case port != "":
		n, err := strconv.Atoi(port)
		if err != nil || n <= 0 || n > 65535 {
			return "", false
		}
		port = strconv.Itoa(n)
	case scheme == "http":
		port = "80"
	case scheme == "https":
		port = "443"
	}
	if scheme != "http" && scheme != "https" {
		return "", false
	}
	return scheme + "://" + net.JoinHostPort(host, port), true
}

// parseOrigin reads one entry of an allowed_origins list,
// "scheme://host[:port]", and returns it normalized. Paths, queries,
// fragments and user info are refused: an origin is only where requests go.
func parseOrigin(s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return "", errors.New("is not a URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "HTTP" && u.Scheme != "HTTPS" {
		return "", errors.New(`must be "http://host[:port]" or "https://host[:port]"`)
	}
	if u.User != nil {
		return "", errors.New("must not hold user info")
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", errors.New("must be an origin only, without path, query or fragment")
	}
	o, ok := originOf(u)
	if !ok {
		return "", errors.New("must have a host and a port in 1-65535")
	}
	return o, nil
}

// Validate checks an allowed_origins list and names each bad entry by its
// key ("api.allowed_origins[2]: ..."); an entry is "scheme://host[:port]"
// of http or https, without path, query, fragment or user info.
func Validate(key string, list []string) []error {
	var errs []error
	for i, s := range list {
		if _, err := parseOrigin(s); err != nil {
			errs = append(errs, fmt.Errorf("%s[%d]: %q %w", key, i, ScrubURLs(s), err))
		}
	}
	return errs
}

// Set is the set of origins a client sends its credentials to: the base
// URL's and the configured allow-list (C1, C3, C6). The zero Set allows
// nothing. A Set is not modified after New; it is safe for concurrent use.
type Set struct {
	home    string
	allowed map[string]bool
	key     string // the allow-list setting, for errors
}

// New returns the set of base's origin and the origins of list, the
// allow-list setting key (for errors).
func New(base *url.URL, key string, list []string) (Set, error) {
	home, ok := originOf(base)
	if !ok {
		return Set{}, errors.New("has no http(s) origin")
	}
	s := Set{home: home, allowed: map[string]bool{home: true}, key: key}
	for i, e := range list {
		o, err := parseOrigin(e)
		if err != nil {
			return Set{}, fmt.Errorf("%s[%d]: %w", key, i, err)
		}
		s.allowed[o] = true
	}
	return s, nil
}

// Check returns an *Error unless u's origin may receive the credentials;
// redirect says whether u is a redirect's target.
func (s Set) Check(u *url.URL, redirect bool) error {
	o, ok := originOf(u)
	if ok && s.allowed[o] {
		return nil
	}
	if !ok {
		o = strings.ToLower(u.Scheme) + ":"
	}
	return &Error{Origin: o, Home: s.home, Key: s.key, Redirect: redirect}
}

// CheckRedirect returns the CheckRedirect of a client's http.Client: a
// redirect to an origin outside the set, or from https to http, is refused
// with an *Error (Go strips Authorization only across domains, never
// a custom header such as Account-Name, and follows https to http); a
// redirect to an origin of the set keeps the bearer token even on another
// host; next,
// the caller's own policy, runs after ours; without one, Go's default of 10
// redirects applies.
func (s Set) CheckRedirect(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if n := len(via); n > 0 && strings.EqualFold(via[n-1].URL.Scheme, "https") && !strings.EqualFold(req.URL.Scheme, "https") {
			o, ok := originOf(req.URL)
			if !ok {
				o = strings.ToLower(req.URL.Scheme) + ":"
			}
			return &Error{Origin: o, Home: s.home, Key: s.key, Redirect: true, Downgrade: true}
		}
		if err := s.Check(req.URL, true); err != nil {
			return err
		}
		// Go drops Authorization on a redirect to another host; to an
		// allowed origin the bearer token belongs there too.
		if n := len(via); n > 0 && req.Header.Get("Authorization") == "" {
			if a := via[0].Header.Get("Authorization"); a != "" {
				req.Header.Set("Authorization", a)
			}
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
}

// ScrubURLs replaces the user info of every URL in s ("http://u:p@host")
// with the redaction mark: errors and logs never show it (C1). The user
// info is taken to run from "://" to the last "@" before the next space or
// quote, so that a password holding "/" or "@" is hidden too; an "@" later
// in a path or query hides a little more than needed, never less.
func ScrubURLs(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i+3])
		s = s[i+3:]
		end := strings.IndexAny(s, " \t\r\n\"'<>`")
		if end < 0 {
			end = len(s)
		}
		if at := strings.LastIndexByte(s[:end], '@'); at >= 0 {
			b.WriteString(secret.Redacted)
			s = s[at:]
		}
	}
}
