package source

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// maxScanDepth bounds the nesting the page scanner follows.
const maxScanDepth = 512

// scanner walks a JSON document once, validating its structure, so that a
// page's records can be sliced out of the body without decoding or copying
// them (the envelopes keep sub-slices of the body, which nothing modifies).
type scanner struct {
	b []byte
	i int
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

// parsePage reads a page body: the records under dataKey (sub-slices of
// body, not copies) and, when present, the paging member (C3). Unknown
// members are skipped (seed: responses gain fields without notice). A nil or
// blank body (204) is an empty page. A body that is not one complete JSON
// object is an error, so that a cut-off answer is retried rather than
// half-delivered (C5). Each record is validated in full later, when its id
// is computed.
func parsePage(body []byte, dataKey string) (pageBody, error) {
	var p pageBody
	s := &scanner{b: body}
	if s.ws(); s.i == len(s.b) {
		return p, nil
	}
	if err := s.expect('{'); err != nil {
		return p, errors.New("page: not a JSON object")
	}
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
				if err := s.records(&p); err != nil {
					return p, fmt.Errorf("page member %s: %w", dataKey, err)
				}
			case "paging":
				v, err := s.value(1)
				if err != nil {
					return p, err
				}
				var pg *pagingJSON
				if err := json.Unmarshal(v, &pg); err != nil {
					return p, fmt.Errorf("page member paging: %w", err)
				}
				if pg != nil {
					p.HasPaging = true
					p.Rows, p.TotalRows = pg.Rows, pg.TotalRows
					if pg.Urls != nil && pg.Urls.NextPage != nil {
						p.Next = *pg.Urls.NextPage
					}
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
	return p, nil
}

// records reads the array of records (or null) at s.i into p.Records.
func (s *scanner) records(p *pageBody) error {
	switch s.peek() {
	case 'n':
		_, err := s.value(1)
		return err
	case '[':
	default:
		return s.errorf("not an array")
	}
	s.i++
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for n := 0; ; n++ {
		if s.peek() != '{' {
			return fmt.Errorf("record %d is not a JSON object", n)
		}
		v, err := s.value(1)
		if err != nil {
			return err
		}
		p.Records = append(p.Records, json.RawMessage(v))
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
