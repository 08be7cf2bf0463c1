package secret

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Scrubber removes the credentials of the process from text that may hold
// a server's words: an error body, an OAuth error_description, a proxy's
// echo of the request. It knows each credential in its plain form and in
// the forms a request carries it in (see Add and AddBasic), and replaces
// every one with Redacted.
//
// The process has one: the application builds it from the loaded
// configuration and hands it to the API clients, the Kafka SASL mechanism
// and the sinks, which add what they read later (a secret file read anew
// at each authentication), so that every error that can carry a server's
// words passes one scrubber that knows every secret. A component given
// none builds one of its own secrets.
//
// A nil *Scrubber scrubs nothing. Its methods are safe for concurrent use.
type Scrubber struct {
	mu    sync.Mutex // serializes Add, AddBasic
	forms map[string]bool
	r     atomic.Pointer[strings.Replacer] // nil while forms is empty
}

// NewScrubber returns a scrubber of secrets (Add).
func NewScrubber(secrets ...Secret) *Scrubber {
	s := &Scrubber{forms: make(map[string]bool)}
	s.Add(secrets...)
	return s
}

// Add makes the scrubber remove each secret, unset ones aside, in every
// form a request or an error may carry it in: as it is and without
// surrounding white space (how secret files are read); URL-encoded, as in
// a form body or a query (url.QueryEscape, with upper- and lower-case hex)
// or a path; escaped inside a JSON string (with and without HTML
// escaping) or a Go quoted string (%q); and base64-encoded (standard and
// URL alphabets, with and without padding). Adding a secret again is
// harmless.
func (s *Scrubber) Add(secrets ...Secret) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	for _, sec := range secrets {
		changed = s.add(sec.Reveal()) || changed
	}
	if changed {
		s.rebuild()
	}
}

// AddBasic makes the scrubber remove, besides pass itself (Add), the HTTP
// Basic credentials of user and pass: base64 of "user:pass", and of both
// URL-encoded first as OAuth 2.0 clients do (RFC 6749 section 2.3.1), in
// every form Add knows. Nothing is added when pass is unset.
func (s *Scrubber) AddBasic(user string, pass Secret) {
	if s == nil || !pass.IsSet() {
		return
	}
	p := pass.Reveal()
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := s.add(p)
	for _, pair := range []string{user + ":" + p, url.QueryEscape(user) + ":" + url.QueryEscape(p)} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding} {
			changed = s.add(enc.EncodeToString([]byte(pair))) || changed
		}
	}
	if changed {
		s.rebuild()
	}
}

// MinScrubLen is the length under which a form of a secret is not
// scrubbed: a secret of one to three characters is no credential worth the
// name, and removing it from every text would garble ordinary words (a
// secret "s" would turn "connection refused" into "refu[redacted]ed").
const MinScrubLen = 4

// add records the forms of v and reports whether any was new. s.mu is
// held.
func (s *Scrubber) add(v string) bool {
	changed := false
	for _, f := range forms(v) {
		if len(f) >= MinScrubLen && !s.forms[f] {
			s.forms[f] = true
			changed = true
		}
	}
	return changed
}

// rebuild makes the replacer of s.forms: longest form first, so that a
// form holding another is replaced whole (strings.Replacer takes, at each
// position, the first of its patterns that matches). s.mu is held.
func (s *Scrubber) rebuild() {
	all := make([]string, 0, len(s.forms))
	for f := range s.forms {
		all = append(all, f)
	}
	slices.SortFunc(all, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	pairs := make([]string, 0, 2*len(all))
	for _, f := range all {
		pairs = append(pairs, f, Redacted)
	}
	s.r.Store(strings.NewReplacer(pairs...))
}

// forms returns v in every form Add removes (some may repeat or be
// empty).
func forms(v string) []string {
	if v == "" {
		return nil
	}
	var out []string
	for _, x := range []string{v, strings.TrimSpace(v)} {
		if x == "" {
			continue
		}
		q := url.QueryEscape(x)
		out = append(out, x, q, lowerHex(q), url.PathEscape(x), lowerHex(url.PathEscape(x)),
			jsonInner(x, true), jsonInner(x, false),
			strings.Trim(strconv.Quote(x), `"`), strings.Trim(strconv.QuoteToASCII(x), `"`))
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			out = append(out, enc.EncodeToString([]byte(x)))
		}
	}
	return out
}

// jsonInner is x as it appears inside a JSON string.
func jsonInner(x string, escapeHTML bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(x); err != nil {
		return x
	}
	return strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(b.String(), `"`), "\n"), `"`)
}

// lowerHex writes the %XX escapes of s in lower case, as some servers and
// proxies echo them.
func lowerHex(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lowerByte(b[i+1]), lowerByte(b[i+2])
			i += 2
		}
	}
	return string(b)
}

func lowerByte(c byte) byte {
	if c >= 'A' && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

// Scrub returns text with every form of every secret replaced by Redacted.
// Scrub text whole before cutting it short: a secret cut in two is no
// longer recognized.
func (s *Scrubber) Scrub(text string) string {
	if s == nil {
		return text
	}
	r := s.r.Load()
	if r == nil {
		return text
	}
	return r.Replace(text)
}

// Error returns err with a scrubbed message (Scrub); nil stays nil, and an
// error whose message holds no secret is returned as it is. The scrubbed
// error unwraps to err, so that errors.Is and errors.As still classify
// it (a permanent error, a context's end): print the scrubbed error, never
// what it unwraps to.
func (s *Scrubber) Error(err error) error {
	if err == nil || s == nil {
		return err
	}
	msg := err.Error()
	clean := s.Scrub(msg)
	if clean == msg {
		return err
	}
	return &scrubbedError{msg: clean, err: err}
}

// scrubbedError is an error whose message was scrubbed.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }
