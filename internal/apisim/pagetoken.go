package apisim

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"net/http"
)

// chain is the state of a next-page chain (C3). It travels inside the
// next-page URL, HMAC-signed, so the simulator keeps no state per chain:
// memory stays constant however many chains are open.
type chain struct {
	src     sourceID
	account string
	user    string
	// start and end bound the window (Unix ms); snap is when the first
	// page was served: the chain sees the data as of then, and its URLs
	// expire next_page_ttl after it.
	start, end, snap int64
	// cursor is the next position in the window's permutation to scan;
	// served counts the rows of earlier pages; total is the result set's
	// true size, computed once on the first page.
	cursor, served, total int64
	page                  int64
	filtersRaw            []byte
	returnsRaw            []byte
}

const (
	tokenVersion = 1
	macLen       = 16
)

var errBadToken = errors.New("unknown page token")

// seal encodes c as an opaque URL-safe token signed with key.
func (c *chain) seal(key []byte) string {
	b := make([]byte, 0, 96+len(c.filtersRaw)+len(c.returnsRaw))
	b = append(b, tokenVersion, byte(c.src))
	b = appendBytes(b, []byte(c.account))
	b = appendBytes(b, []byte(c.user))
	for _, v := range [...]int64{c.start, c.end, c.snap, c.cursor, c.served, c.total, c.page} {
		b = binary.AppendVarint(b, v)
	}
	b = appendBytes(b, c.filtersRaw)
	b = appendBytes(b, c.returnsRaw)
	m := hmac.New(sha256.New, key)
	m.Write(b)
	b = m.Sum(b)[:len(b)+macLen]
	return base64.RawURLEncoding.EncodeToString(b)
}

func appendBytes(dst, s []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// openChain verifies and decodes a token made by seal. Any error means the
// token is unknown or forged (404).
func openChain(tok string, key []byte) (chain, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) < 2+macLen {
		return chain{}, errBadToken
	}
	body, mac := b[:len(b)-macLen], b[len(b)-macLen:]
	m := hmac.New(sha256.New, key)
	m.Write(body)
	if !hmac.Equal(m.Sum(nil)[:macLen], mac) {
		return chain{}, errBadToken
	}
	if body[0] != tokenVersion || body[1] >= byte(numSources) {
		return chain{}, errBadToken
	}
	c := chain{src: sourceID(body[1])}
	d := decoder{b: body[2:]}
	c.account = string(d.bytes())
	c.user = string(d.bytes())
	for _, p := range [...]*int64{&c.start, &c.end, &c.snap, &c.cursor, &c.served, &c.total, &c.page} {
		*p = d.varint()
	}
	c.filtersRaw = d.bytes()
	c.returnsRaw = d.bytes()
	if d.bad || len(d.b) != 0 {
		return chain{}, errBadToken
	}
	return c, nil
}

type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	l, n := binary.Uvarint(d.b)
	if n <= 0 || uint64(len(d.b)-n) < l {
		d.bad = true
		return nil
	}
	s := d.b[n : n+int(l)]
	d.b = d.b[n+int(l):]
	return s
}

// appendNextPage appends to h the nextPage member of a page's urls: the
// URL of ch's next page as r reached the server, its token sealed.
func (s *Server) appendNextPage(h []byte, r *http.Request, si *sourceInfo, ch *chain) []byte {
	h = append(h, `"nextPage":"`...)
	h = append(h, baseURL(r)...)
	h = append(h, si.path...)
	h = append(h, pagesPath...)
	h = append(h, ch.seal(s.auth.key)...)
	return append(h, '"')
}
