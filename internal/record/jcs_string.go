package record

import (
	"unicode/utf16"
	"unicode/utf8"
)

// str writes the canonical form of the string at c.pos to dst and leaves
// c.pos after its closing quote. With wantKey it also returns the decoded
// string for sorting (a sub-slice of the input when the string has no
// escapes, else of c.keys; callers must not modify it) and whether it is
// odd: holding invalid UTF-8 or a lone surrogate.
//
// The output is the JCS form of the decoded string, written on the fly:
// the quote, the backslash and control characters are escaped, with the
// short forms where JSON has them; every other character is written as
// UTF-8. Two deviations keep distinct inputs apart: a lone surrogate escape
// is written as itself (\ud800, lowercase hex), which no valid string can
// produce since a real backslash is always written \\; and bytes that are
// not UTF-8 are copied as they are, which no valid string can produce
// either.
func (c *canon) str(dst []byte, wantKey bool) (out, key []byte, odd bool, err error) {
	c.pos++ // opening quote
	start := c.pos
	// Fast path: no escapes, no control characters.
	for c.pos < len(c.src) {
		b := c.src[c.pos]
		if b == '"' {
			s := c.src[start:c.pos]
			c.pos++
			if !utf8.Valid(s) {
				c.invalidUTF8, odd = true, true
			}
			dst = append(dst, '"')
			dst = append(dst, s...)
			return append(dst, '"'), s, odd, nil
		}
		if b == '\\' || b < 0x20 {
			break
		}
		c.pos++
	}
	dst = append(dst, '"')
	keyStart := len(c.keys)
	run := start // start of the bytes not yet copied
	for {
		for c.pos < len(c.src) {
			if b := c.src[c.pos]; b == '"' || b == '\\' || b < 0x20 {
				break
			}
			c.pos++
		}
		if c.pos >= len(c.src) {
			return dst, nil, false, c.errorf("unterminated string")
		}
		// Raw bytes hold whole characters: an escape never continues one.
		seg := c.src[run:c.pos]
		if !utf8.Valid(seg) {
			c.invalidUTF8, odd = true, true
		}
		dst = append(dst, seg...)
		if wantKey {
			c.keys = append(c.keys, seg...)
		}
		b := c.src[c.pos]
		if b == '"' {
			c.pos++
			if wantKey {
				key = c.keys[keyStart:len(c.keys):len(c.keys)]
			}
			return append(dst, '"'), key, odd, nil
		}
		if b < 0x20 {
			return dst, nil, false, c.errorf("control character in string")
		}
		// escape
		if c.pos+1 >= len(c.src) {
			return dst, nil, false, c.errorf("unterminated escape")
		}
		e := c.src[c.pos+1]
		c.pos += 2
		var r rune
		switch e {
		case '"', '\\', '/':
			r = rune(e)
		case 'b':
			r = '\b'
		case 'f':
			r = '\f'
		case 'n':
			r = '\n'
		case 'r':
			r = '\r'
		case 't':
			r = '\t'
		case 'u':
			if r, err = c.hex4(); err != nil {
				return dst, nil, false, err
			}
			if utf16.IsSurrogate(r) {
				// A high surrogate followed by an escaped low one is one
				// character; anything else is a lone surrogate.
				paired := false
				if r < 0xDC00 && c.pos+1 < len(c.src) && c.src[c.pos] == '\\' && c.src[c.pos+1] == 'u' {
					save := c.pos
					c.pos += 2
					r2, err := c.hex4()
					if err != nil {
						return dst, nil, false, err
					}
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						r, paired = d, true
					} else {
						c.pos = save
					}
				}
				if !paired {
					odd = true
					dst = append(dst, '\\', 'u', hexDigits[r>>12], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
					if wantKey {
						c.keys = append(c.keys, 0xE0|byte(r>>12), 0x80|byte(r>>6&0x3F), 0x80|byte(r&0x3F))
					}
					run = c.pos
					continue
				}
			}
		default:
			return dst, nil, false, c.errorf("invalid escape \\%c", e)
		}
		dst = appendJCSRune(dst, r)
		if wantKey {
			c.keys = utf8.AppendRune(c.keys, r)
		}
		run = c.pos
	}
}

func (c *canon) hex4() (rune, error) {
	if c.pos+4 > len(c.src) {
		return 0, c.errorf("short \\u escape")
	}
	var r rune
	for _, h := range c.src[c.pos : c.pos+4] {
		r <<= 4
		switch {
		case h >= '0' && h <= '9':
			r |= rune(h - '0')
		case h >= 'a' && h <= 'f':
			r |= rune(h - 'a' + 10)
		case h >= 'A' && h <= 'F':
			r |= rune(h - 'A' + 10)
		default:
			return 0, c.errorf("invalid hex digit in \\u escape")
		}
	}
	c.pos += 4
	return r, nil
}

const hexDigits = "0123456789abcdef"

// appendJCSRune writes the character r (not a surrogate) as RFC 8785
// section 3.2.2.2 writes it inside a string.
func appendJCSRune(dst []byte, r rune) []byte {
	switch {
	case r >= 0x20 && r != '"' && r != '\\':
		if r < utf8.RuneSelf {
			return append(dst, byte(r))
		}
		return utf8.AppendRune(dst, r)
	case r == '"':
		return append(dst, '\\', '"')
	case r == '\\':
		return append(dst, '\\', '\\')
	case r == '\b':
		return append(dst, '\\', 'b')
	case r == '\f':
		return append(dst, '\\', 'f')
	case r == '\n':
		return append(dst, '\\', 'n')
	case r == '\r':
		return append(dst, '\\', 'r')
	case r == '\t':
		return append(dst, '\\', 't')
	default:
		return append(dst, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xF])
	}
}

// appendJCSString writes s as a JSON string with the escapes of RFC 8785
// section 3.2.2.2: only the quote, the backslash and control characters are
// escaped, with the short forms where JSON has them.
func appendJCSString[S ~string | ~[]byte](dst []byte, s S) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b >= 0x20 && b != '"' && b != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		dst = appendJCSRune(dst, rune(b))
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
