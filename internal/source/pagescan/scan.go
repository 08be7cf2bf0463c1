package pagescan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/svcexport/collector/internal/api"
)

// Body is one decoded answer of a search or list request.
type Body struct {
	// HasPaging is set when the answer has a paging member: paging is in
	// effect only then (C3; audit logs may answer without it).
	HasPaging bool
	Rows      int
	TotalRows int64
	// Next is the next-page URL as sent, empty on the last page.
	Next    string
	Records []json.RawMessage
}

type pagingJSON struct {
	Rows      int   `json:"rows"`
	TotalRows int64 `json:"totalRows"`
	Urls      *struct {
		NextPage *string `json:"nextPage"`
	} `json:"urls"`
}

// maxScanDepth bounds the nesting the page scanner follows.
const maxScanDepth = 512

// scanner walks a JSON document once, validating its structure, so that a
// page's records can be sliced out of the body without decoding or copying
// them (the envelopes keep sub-slices of the body, which nothing modifies).
type scanner struct {
	b []byte
	i int
	// shape is the first problem of a well-formed document that is not a
	// page (it wraps api.ErrMalformedPage). The scan goes on after it, so that
	// a body that is also cut off is reported as cut off.
	shape error
}

// malformed notes a shape problem unless one is noted already.
func (s *scanner) malformed(format string, args ...any) {
	if s.shape == nil {
		s.shape = malformedf(format, args...)
	}
}

func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("page: byte %d: %s", s.i, fmt.Sprintf(format, args...))
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// expect consumes c after optional whitespace.
func (s *scanner) expect(c byte) error {
	s.ws()
	if s.i >= len(s.b) {
		return s.errorf("unexpected end, want %q", c)
	}
	if s.b[s.i] != c {
		return s.errorf("want %q, got %q", c, s.b[s.i])
	}
	s.i++
	return nil
}

// peek returns the next non-space byte without consuming it (0 at the end).
func (s *scanner) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// str skips a string starting at s.i (the opening quote) and returns its raw
// bytes, quotes included.
func (s *scanner) str() ([]byte, error) {
	start := s.i
	s.i++
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return s.b[start:s.i], nil
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return nil, s.errorf("unterminated escape")
			}
			if s.b[s.i+1] == 'u' {
				s.i += 6
			} else {
				s.i += 2
			}
		case c < 0x20:
			return nil, s.errorf("control character in a string")
		default:
			s.i++
		}
	}
	return nil, s.errorf("unterminated string")
}

// value skips one JSON value and returns its bytes.
func (s *scanner) value(depth int) ([]byte, error) {
	if depth > maxScanDepth {
		return nil, s.errorf("nesting deeper than %d", maxScanDepth)
	}
	s.ws()
	if s.i >= len(s.b) {
		return nil, s.errorf("unexpected end of body")
	}
	start := s.i
	switch c := s.b[s.i]; {
	case c == '"':
		return s.str()
	case c == '{':
		s.i++
		if s.peek() == '}' {
			s.i++
			return s.b[start:s.i], nil
		}
		for {
			if s.peek() != '"' {
				return nil, s.errorf("want a member name")
			}
			if _, err := s.str(); err != nil {
				return nil, err
			}
			if err := s.expect(':'); err != nil {
				return nil, err
			}
			if _, err := s.value(depth + 1); err != nil {
				return nil, err
			}
			switch s.peek() {
			case ',':
				s.i++
			case '}':
				s.i++
				return s.b[start:s.i], nil
			default:
				return nil, s.errorf("want , or } in an object")
			}
		}
	case c == '[':
		s.i++
		if s.peek() == ']' {
			s.i++
			return s.b[start:s.i], nil
		}
		for {
			if _, err := s.value(depth + 1); err != nil {
				return nil, err
			}
			switch s.peek() {
			case ',':
				s.i++
			case ']':
				s.i++
				return s.b[start:s.i], nil
			default:
				return nil, s.errorf("want , or ] in an array")
			}
		}
	case c == '-' || (c >= '0' && c <= '9'):
		s.i++
		for s.i < len(s.b) {
			c := s.b[s.i]
			if (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' {
				s.i++
				continue
			}
			break
		}
		return s.b[start:s.i], nil
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
				s.i += len(lit)
				return s.b[start:s.i], nil
			}
		}
		return nil, s.errorf("unexpected %q", c)
	}
}

// malformedf returns an error of the page classifier for an answer that
// is JSON but not a page; it wraps api.ErrMalformedPage.
func malformedf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", api.ErrMalformedPage, fmt.Sprintf(format, args...))
}

// Classify classifies one 2xx answer of a search or list request
// (CONTRACT C3, C5, C6). Only two answers are results: a 204 (an empty
// result, whatever its body) and a 200 holding a well-formed page (see
// Parse). Every other answer is an error, never an empty window: an
// empty window moves the watermark past records that were never read.
func Classify(status int, body []byte, dataKey string) (Body, error) {
	switch status {
	case http.StatusNoContent:
		return Body{}, nil
	case http.StatusOK:
		return Parse(body, dataKey)
	}
	return Body{}, malformedf("HTTP %d is not an answer of a search (want 200 or 204)", status)
}

// Parse reads the body of a 200: one JSON object whose member dataKey
// is an array of JSON objects, the records (sub-slices of body, not
// copies), possibly empty. Paging is in effect when the paging member is
// present and not null (C3: audit logs may answer without it); then it must
// be an object whose rows and totalRows, when present, are integers >= 0
// and whose urls.nextPage, when present, is a string or null. Unknown
// members are skipped (seed: responses gain fields without notice).
//
// Everything else is an error, so that no answer is mistaken for an empty
// window (C5): a body that is not complete JSON (cut off, HTML) is a plain
// error, and a JSON body that is not such a page (empty, {}, no data
// member, data null or not an array, a record that is not an object, a
// member given twice, malformed paging) is an error wrapping
// api.ErrMalformedPage. A null data member is refused too: the contract's empty
// result is a 204 or an empty array, and a null says nothing about whether
// the window held records. Each record is validated in full later, when its
// id is computed. On error the page is empty.
func Parse(body []byte, dataKey string) (Body, error) {
	p, err := scanPage(body, dataKey)
	if err != nil {
		return Body{}, err
	}
	return p, nil
}

func scanPage(body []byte, dataKey string) (Body, error) {
	var p Body
	s := &scanner{b: body}
	if s.ws(); s.i == len(s.b) {
		return p, malformedf("empty body (an empty result is a 204)")
	}
	if s.b[s.i] != '{' {
		if _, err := s.value(0); err == nil {
			if s.ws(); s.i == len(s.b) {
				return p, malformedf("JSON %s, not an object", jsonKind(body))
			}
		}
		return p, errors.New("page: not a JSON object")
	}
	s.i++
	var hasData, hasPaging bool
	if s.peek() == '}' {
		s.i++
	} else {
		for {
			if s.peek() != '"' {
				return p, s.errorf("want a member name")
			}
			rawKey, err := s.str()
			if err != nil {
				return p, err
			}
			key := string(rawKey[1 : len(rawKey)-1])
			if bytes.IndexByte(rawKey, '\\') >= 0 {
				if err := json.Unmarshal(rawKey, &key); err != nil {
					return p, fmt.Errorf("page member name %s: %w", rawKey, err)
				}
			}
			if err := s.expect(':'); err != nil {
				return p, err
			}
			switch key {
			case dataKey:
				if hasData {
					s.malformed("member %q given twice", dataKey)
				}
				hasData = true
				if err := s.records(&p); err != nil {
					return p, fmt.Errorf("page member %s: %w", dataKey, err)
				}
			case "paging":
				if hasPaging {
					s.malformed("member paging given twice")
				}
				hasPaging = true
				v, err := s.value(1)
				if err != nil {
					return p, err
				}
				if err := p.paging(v); err != nil && s.shape == nil {
					s.shape = err
				}
			default:
				if _, err := s.value(1); err != nil {
					return p, err
				}
			}
			if s.peek() == ',' {
				s.i++
				continue
			}
			if err := s.expect('}'); err != nil {
				return p, err
			}
			break
		}
	}
	if s.ws(); s.i != len(s.b) {
		return p, errors.New("page: data after the JSON object")
	}
	if s.shape != nil {
		return p, s.shape
	}
	if !hasData {
		return p, malformedf("no %q member", dataKey)
	}
	return p, nil
}

// paging reads the paging member v (C3) into p.
func (p *Body) paging(v []byte) error {
	if string(v) == "null" {
		return nil // as if absent
	}
	if v[0] != '{' {
		return malformedf("paging is JSON %s, not an object", jsonKind(v))
	}
	var pg pagingJSON
	if err := json.Unmarshal(v, &pg); err != nil {
		return malformedf("paging: %v", err)
	}
	if pg.Rows < 0 || pg.TotalRows < 0 {
		return malformedf("paging: negative rows (%d) or totalRows (%d)", pg.Rows, pg.TotalRows)
	}
	p.HasPaging = true
	p.Rows, p.TotalRows = pg.Rows, pg.TotalRows
	if pg.Urls != nil && pg.Urls.NextPage != nil {
		p.Next = *pg.Urls.NextPage
	}
	return nil
}

// jsonKind names the kind of the JSON value v starts with, for errors.
func jsonKind(v []byte) string {
	switch bytes.TrimLeft(v, " \t\r\n")[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 'n':
		return "null"
	case 't', 'f':
		return "boolean"
	default:
		return "number"
	}
}

// records reads the array of records at s.i into p.Records. A value that
// is not an array, or a record that is not an object, is noted as a shape
// problem and skipped.
func (s *scanner) records(p *Body) error {
	if s.peek() != '[' {
		v, err := s.value(1)
		if err != nil {
			return err
		}
		s.malformed("JSON %s, not an array", jsonKind(v))
		return nil
	}
	s.i++
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for n := 0; ; n++ {
		obj := s.peek() == '{'
		v, err := s.value(1)
		if err != nil {
			return err
		}
		if obj {
			p.Records = append(p.Records, json.RawMessage(v))
		} else {
			s.malformed("record %d is JSON %s, not an object", n, jsonKind(v))
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.errorf("want , or ] after record %d", n)
		}
	}
}
