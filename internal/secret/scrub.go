package secret

import (
	"cmp"
	"encoding/base64"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf16"
	"unicode/utf8"
)

// Scrubber removes the credentials of the process from text that may hold
// a server's words: an error body, an OAuth error_description, a proxy's
// echo of the request. It knows each credential, and the base64 forms a
// request may carry it in (see Add and AddBasic), and finds them in the
// text as it is and under the escapes a server may have put on it, each
// replaced with Redacted.
//
// The process has one: the application builds it from the loaded
// configuration and hands it to the API clients, the Kafka SASL mechanism
// and the sinks, which add what they read later (a secret file read anew
// at each authentication or token renewal), so that every error that can
// carry a server's words passes one scrubber that knows every secret, the
// secrets a file held before it was rotated included. A component given
// none builds one of its own secrets.
//
// A nil *Scrubber scrubs nothing. Its methods are safe for concurrent use.
type Scrubber struct {
	mu   sync.Mutex // serializes Add, AddBasic
	seen map[needle]bool
	set  atomic.Pointer[matcher] // nil while seen is empty
}

// needle is one string Scrub looks for.
type needle struct {
	text string
	// cut, when not 0, makes a run of at least cut bytes of text, from its
	// start, a match too: a secret a message cut short.
	cut int
}

// NewScrubber returns a scrubber of secrets (Add).
func NewScrubber(secrets ...Secret) *Scrubber {
	s := &Scrubber{seen: make(map[needle]bool)}
	s.Add(secrets...)
	return s
}

// Add makes the scrubber remove each secret, unset ones aside, in every
// form a request or an error may carry it in. Scrub finds it:
//
//   - as it is, without surrounding white space (how secret files are
//     read), and cut short after at least MinCutLen bytes;
//   - under any mix of the escapes servers, proxies and loggers put on
//     text: URL escapes (%XX in upper or lower case, "+" for a space, as in
//     a form body, a query or a path, escaped again as %25XX), HTML
//     character references (&amp; &quot; &#43; &#x2B;), and the escapes of
//     a JSON or Go string (\" \\ \u0026 \xc3), nested once or more;
//   - base64-encoded (standard and URL alphabets, padded or not), alone or
//     inside the base64 of a longer text, such as a whole form body
//     (grant_type=client_credentials&client_secret=...), with the secret
//     as it is or URL-escaped in it; the base64 of the secret alone also
//     when cut short after at least MinCutLen characters.
//
// Adding a secret again is harmless; Add never forgets one, so that a
// secret a rotated file held is still scrubbed.
func (s *Scrubber) Add(secrets ...Secret) {
	if s == nil {
		return
	}
	var ns []needle
	for _, sec := range secrets {
		ns = append(ns, valueNeedles(sec.Reveal())...)
	}
	s.merge(ns)
}

// AddBasic makes the scrubber remove, besides pass itself (Add), the HTTP
// Basic credentials of user and pass: base64 of "user:pass", and of both
// URL-encoded first as OAuth 2.0 clients do (RFC 6749 section 2.3.1),
// escaped as Add says. Nothing is added when pass is unset.
func (s *Scrubber) AddBasic(user string, pass Secret) {
	if s == nil || !pass.IsSet() {
		return
	}
	p := pass.Reveal()
	ns := valueNeedles(p)
	for _, pair := range []string{user + ":" + p, url.QueryEscape(user) + ":" + url.QueryEscape(p)} {
		ns = append(ns, base64Needles(pair, false)...)
	}
	s.merge(ns)
}

// MinScrubLen is the length under which a form of a secret is not
// scrubbed: a secret of one to three characters is no credential worth the
// name, and removing it from every text would garble ordinary words (a
// secret "s" would turn "connection refused" into "refu[redacted]ed").
const MinScrubLen = 4

// MinCutLen is the length from which the start of a secret (or of its
// base64), cut short by a message that shortens what it quotes, is
// scrubbed.
const MinCutLen = 12

// minCoreLen is the shortest base64 run of a secret inside the base64 of
// a longer text that Scrub looks for: shorter ones would match by chance
// in other base64 text (a bearer token).
const minCoreLen = 8

// merge adds ns to the needles and publishes the new set when one was
// new.
func (s *Scrubber) merge(ns []needle) {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	for _, n := range ns {
		if len(n.text) >= MinScrubLen && !s.seen[n] {
			s.seen[n] = true
			changed = true
		}
	}
	if !changed {
		return
	}
	s.set.Store(newMatcher(s.seen))
}

// matcher finds needles in one pass over a text: a position is looked at
// further only when its first two bytes start some needle (a bit set), and
// then only the needles whose first MinScrubLen bytes are there.
type matcher struct {
	needles []needle
	pairs   [1 << 16 / 64]uint64        // bit b0<<8|b1 for each needle's first two bytes
	byStart map[[MinScrubLen]byte][]int // needles by their first MinScrubLen bytes
}

func newMatcher(seen map[needle]bool) *matcher {
	m := &matcher{byStart: make(map[[MinScrubLen]byte][]int)}
	for n := range seen {
		m.needles = append(m.needles, n)
	}
	slices.SortFunc(m.needles, func(a, b needle) int {
		return cmp.Or(len(b.text)-len(a.text), strings.Compare(a.text, b.text), a.cut-b.cut)
	})
	for i, n := range m.needles {
		var k [MinScrubLen]byte
		copy(k[:], n.text)
		m.byStart[k] = append(m.byStart[k], i)
		p := uint16(n.text[0])<<8 | uint16(n.text[1])
		m.pairs[p/64] |= 1 << (p % 64)
	}
	return m
}

// valueNeedles returns what Scrub looks for to find the secret v: v and
// v without surrounding white space, with their base64 forms. The escaped
// forms need no needle: Scrub undoes escapes in the text.
func valueNeedles(v string) []needle {
	var out []needle
	for i, x := range []string{v, strings.TrimSpace(v)} {
		if len(x) < MinScrubLen || (i == 1 && x == v) {
			continue // too short to scrub, in any form
		}
		out = append(out, needle{text: x, cut: cutOf(x)})
		for _, src := range []string{x, url.QueryEscape(x), lowerHex(url.QueryEscape(x)), url.PathEscape(x)} {
			out = append(out, base64Needles(src, src == x)...)
		}
	}
	return out
}

// cutOf is the cut of a needle of text: MinCutLen when text is longer.
func cutOf(text string) int {
	if len(text) > MinCutLen {
		return MinCutLen
	}
	return 0
}

// base64Needles returns the base64 forms of src in both alphabets: the
// whole encoding, padded and not, and the runs of it that any base64 of a
// longer text holding src shows whatever src's offset: for src at an
// offset of 1 or 2 bytes past a multiple of three, the first 2 or 3
// characters mix in the bytes before it; the last one or two characters
// mix in the bytes after it (or the padding). cut says whether the
// encoding of src alone is also found cut short.
func base64Needles(src string, cut bool) []needle {
	var out []needle
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		full := enc.EncodeToString([]byte(src))
		out = append(out, needle{text: full})
		raw := enc.WithPadding(base64.NoPadding)
		for k, skip := range [3]int{0, 2, 3} {
			b := make([]byte, k, k+len(src))
			b = append(b, src...)
			e := raw.EncodeToString(b)
			core := e[skip : len(b)*8/6]
			if len(core) < minCoreLen {
				continue
			}
			n := needle{text: core}
			if k == 0 && cut {
				n.cut = cutOf(core)
			}
			out = append(out, n)
		}
	}
	return out
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

// maxUnescapes bounds how many layers of escapes Scrub undoes: a JSON
// string of an HTML page of a query is three.
const maxUnescapes = 4

// Scrub returns text with every form of every secret replaced by Redacted.
// It looks for each secret in text as it is, and in the text each layer of
// escapes undone gives (up to maxUnescapes layers, "+" read as a space and
// as itself), and replaces in text the whole stretch that a match came
// from, escapes included. A secret cut short is found from MinCutLen
// bytes on; scrub text whole before cutting it short all the same.
func (s *Scrubber) Scrub(text string) string {
	if s == nil {
		return text
	}
	set := s.set.Load()
	if set == nil || len(text) < MinScrubLen {
		return text
	}
	found := set.find(view{s: text}, nil)
	if strings.ContainsAny(text, `%&\`) || strings.Contains(text, "+") {
		// "+" as itself matters only when the text has one (after undoing
		// escapes: %2B); otherwise both readings are the same.
		for _, plus := range []bool{true, false} {
			v := view{s: text}
			for range maxUnescapes {
				next, changed := unescape(v, plus)
				if !changed {
					break
				}
				found = set.find(next, found)
				v = next
			}
			if !strings.Contains(text, "+") && !strings.Contains(v.s, "+") {
				break
			}
		}
	}
	if len(found) == 0 {
		return text
	}
	return redact(text, found)
}

// span is a stretch [lo, hi) of the text given to Scrub.
type span struct{ lo, hi int }

// view is the text with some layers of escapes undone: s, and for each of
// its bytes the stretch of the original text it came from (nil: s is the
// original text).
type view struct {
	s     string
	spans []span
}

// at returns the stretch of the original text that byte i of v came from.
func (v view) at(i int) span {
	if v.spans == nil {
		return span{i, i + 1}
	}
	return v.spans[i]
}

// find appends to out the stretches of the original text that the
// matches of m's needles in v came from.
func (m *matcher) find(v view, out []span) []span {
	s := v.s
	for a := 0; a+MinScrubLen <= len(s); a++ {
		p := uint16(s[a])<<8 | uint16(s[a+1])
		if m.pairs[p/64]&(1<<(p%64)) == 0 {
			continue
		}
		var k [MinScrubLen]byte
		copy(k[:], s[a:])
		for _, i := range m.byStart[k] {
			n := m.needles[i]
			key := n.text
			if n.cut > 0 {
				key = n.text[:n.cut]
			}
			if !strings.HasPrefix(s[a:], key) {
				continue
			}
			b := a + len(key)
			for n.cut > 0 && b < len(s) && b-a < len(n.text) && s[b] == n.text[b-a] {
				b++
			}
			out = append(out, span{v.at(a).lo, v.at(b - 1).hi})
		}
	}
	return out
}

// redact replaces the stretches found of text with Redacted, overlapping
// and adjacent ones as one.
func redact(text string, found []span) string {
	slices.SortFunc(found, func(a, b span) int { return cmp.Or(a.lo-b.lo, a.hi-b.hi) })
	var b strings.Builder
	b.Grow(len(text))
	pos := 0
	for i := 0; i < len(found); {
		cur := found[i]
		for i++; i < len(found) && found[i].lo <= cur.hi; i++ {
			cur.hi = max(cur.hi, found[i].hi)
		}
		b.WriteString(text[pos:cur.lo])
		b.WriteString(Redacted)
		pos = cur.hi
	}
	b.WriteString(text[pos:])
	return b.String()
}

// unescape undoes one layer of escapes in v: %XX (either case), "+" as a
// space when plus is set, HTML character references, and the backslash
// escapes of JSON and Go strings. It reports whether anything changed.
func unescape(v view, plus bool) (view, bool) {
	s := v.s
	out := view{s: "", spans: make([]span, 0, len(s))}
	b := make([]byte, 0, len(s))
	changed := false
	for i := 0; i < len(s); {
		before := len(b)
		var n int
		b, n = unit(b, s[i:], plus)
		if n == 0 {
			b, n = append(b, s[i]), 1
		} else {
			changed = true
		}
		sp := span{v.at(i).lo, v.at(i + n - 1).hi}
		for range len(b) - before {
			out.spans = append(out.spans, sp)
		}
		i += n
	}
	out.s = string(b)
	return out, changed
}

// unit decodes the escape at the start of s, if any, onto b: it returns
// b and the bytes of s it took, 0 for none.
func unit(b []byte, s string, plus bool) ([]byte, int) {
	switch s[0] {
	case '%':
		if len(s) >= 3 && isHex(s[1]) && isHex(s[2]) {
			return append(b, unhex(s[1])<<4|unhex(s[2])), 3
		}
	case '+':
		if plus {
			return append(b, ' '), 1
		}
	case '&':
		return entity(b, s)
	case '\\':
		return backslash(b, s)
	}
	return b, 0
}

// entities are the named HTML character references of the characters
// that HTML escaping changes.
var entities = map[string]byte{"amp": '&', "lt": '<', "gt": '>', "quot": '"', "apos": '\''}

// entity decodes an HTML character reference: &name; &#DDD; or &#xHHH;.
func entity(b []byte, s string) ([]byte, int) {
	end := strings.IndexByte(s[:min(len(s), 12)], ';')
	if end < 2 {
		return b, 0
	}
	name := s[1:end]
	if c, ok := entities[strings.ToLower(name)]; ok {
		return append(b, c), end + 1
	}
	if name[0] != '#' || len(name) < 2 {
		return b, 0
	}
	digits, base := name[1:], rune(10)
	if digits[0] == 'x' || digits[0] == 'X' {
		digits, base = digits[1:], 16
	}
	r, ok := number(digits, base)
	if !ok || !utf8.ValidRune(r) {
		return b, 0
	}
	return utf8.AppendRune(b, r), end + 1
}

// backslash decodes the escape of a JSON or Go string that s starts with.
func backslash(b []byte, s string) ([]byte, int) {
	if len(s) < 2 {
		return b, 0
	}
	switch c := s[1]; c {
	case '"', '\\', '/', '\'':
		return append(b, c), 2
	case 'n':
		return append(b, '\n'), 2
	case 't':
		return append(b, '\t'), 2
	case 'r':
		return append(b, '\r'), 2
	case 'b':
		return append(b, '\b'), 2
	case 'f':
		return append(b, '\f'), 2
	case 'x':
		if len(s) >= 4 && isHex(s[2]) && isHex(s[3]) {
			return append(b, unhex(s[2])<<4|unhex(s[3])), 4
		}
	case 'u':
		if len(s) < 6 {
			return b, 0
		}
		r, ok := number(s[2:6], 16)
		if !ok {
			return b, 0
		}
		if utf16.IsSurrogate(r) && len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
			if lo, ok := number(s[8:12], 16); ok {
				if p := utf16.DecodeRune(r, lo); p != utf8.RuneError {
					return utf8.AppendRune(b, p), 12
				}
			}
		}
		return utf8.AppendRune(b, r), 6
	case 'U':
		if len(s) < 10 {
			return b, 0
		}
		if r, ok := number(s[2:10], 16); ok && utf8.ValidRune(r) {
			return utf8.AppendRune(b, r), 10
		}
	}
	return b, 0
}

// number parses digits (all of them, 1 to 8) in base 10 or 16.
func number(digits string, base rune) (rune, bool) {
	if digits == "" || len(digits) > 8 {
		return 0, false
	}
	var r rune
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		switch {
		case c >= '0' && c <= '9':
			r = r*base + rune(c-'0')
		case base == 16 && isHex(c):
			r = r*base + rune(unhex(c))
		default:
			return 0, false
		}
		if r > utf8.MaxRune {
			return 0, false
		}
	}
	return r, true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
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
