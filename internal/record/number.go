package record

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"strconv"
)

// number parses a JSON number and writes its canonical form. That is the
// ECMAScript form RFC 8785 section 3.2.2.3 prescribes (the shortest
// decimal that reads back as the same float64) whenever that decimal has
// exactly the literal's value, which holds for every number a JSON encoder
// writes from a float64 or from an integer of up to 2^53. Otherwise the
// float64 would merge the literal with other values (9007199254740993 and
// 9007199254740992; 1e400 does not even fit), and the literal's own exact
// value is written instead, in the same ECMAScript layout: significant
// digits without leading or trailing zeros, fixed or exponent form by the
// same rule. Either way the text written has exactly the literal's value,
// so distinct values never share a text, and equal values (0.10 and 0.1,
// 1E21 and 1e+21) always do.
func (c *canon) number(dst []byte) ([]byte, error) {
	start := c.pos
	neg := c.src[c.pos] == '-'
	if neg {
		c.pos++
	}
	intStart := c.pos
	for c.pos < len(c.src) && c.src[c.pos] >= '0' && c.src[c.pos] <= '9' {
		c.pos++
	}
	intEnd := c.pos
	if intEnd == intStart {
		return dst, c.errorf("invalid number")
	}
	if c.src[intStart] == '0' && intEnd-intStart > 1 {
		return dst, c.errorf("number with a leading zero")
	}
	fracStart, fracEnd := intEnd, intEnd
	if c.pos < len(c.src) && c.src[c.pos] == '.' {
		c.pos++
		fracStart = c.pos
		for c.pos < len(c.src) && c.src[c.pos] >= '0' && c.src[c.pos] <= '9' {
			c.pos++
		}
		fracEnd = c.pos
		if fracEnd == fracStart {
			return dst, c.errorf("invalid number fraction")
		}
	}
	var exp []byte // exponent digits, sign excluded
	expNeg := false
	if c.pos < len(c.src) && (c.src[c.pos] == 'e' || c.src[c.pos] == 'E') {
		c.pos++
		if c.pos < len(c.src) && (c.src[c.pos] == '+' || c.src[c.pos] == '-') {
			expNeg = c.src[c.pos] == '-'
			c.pos++
		}
		es := c.pos
		for c.pos < len(c.src) && c.src[c.pos] >= '0' && c.src[c.pos] <= '9' {
			c.pos++
		}
		if c.pos == es {
			return dst, c.errorf("invalid number exponent")
		}
		exp = c.src[es:c.pos]
	}
	lit := c.src[start:c.pos]
	// Fast path: integers of up to 15 digits are exact doubles whose
	// ECMAScript form is the literal itself ("-0" aside).
	if fracStart == intEnd && exp == nil && intEnd-intStart <= 15 {
		if string(lit) == "-0" {
			return append(dst, '0'), nil
		}
		return append(dst, lit...), nil
	}

	// The literal's exact value: 0.d × 10^n with d its significant digits.
	c.digits = append(c.digits[:0], c.src[intStart:intEnd]...)
	c.digits = append(c.digits, c.src[fracStart:fracEnd]...)
	d := c.digits
	lz := 0
	for lz < len(d) && d[lz] == '0' {
		lz++
	}
	d = bytes.TrimRight(d[lz:], "0")
	if len(d) == 0 {
		return append(dst, '0'), nil // every zero is 0, -0 included (JCS)
	}
	exp = bytes.TrimLeft(exp, "0")
	if len(exp) > 18 {
		// Far beyond float64 (|exponent| >= 10^18): kept, with an
		// exponent too large for an int64.
		return appendBigExponent(dst, neg, d, intEnd-intStart-lz, exp, expNeg), nil
	}
	var e int64
	for _, b := range exp {
		e = e*10 + int64(b-'0')
	}
	if expNeg {
		e = -e
	}
	n := int64(intEnd-intStart-lz) + e

	if f, err := strconv.ParseFloat(string(lit), 64); err == nil && f != 0 {
		var buf [32]byte
		sd, sn := shortestDigits(&buf, f)
		if int64(sn) == n && bytes.Equal(sd, d) {
			return appendECMADigits(dst, neg, sd, n), nil
		}
	}
	return appendECMADigits(dst, neg, d, n), nil
}

// AppendECMANumber appends f formatted as ECMAScript's Number.prototype.toString
// does (the form RFC 8785 requires). NaN and infinities are an error.
func AppendECMANumber(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, fmt.Errorf("%w: %v cannot be represented", ErrInvalidJSON, f)
	}
	if f == 0 {
		return append(dst, '0'), nil
	}
	var buf [32]byte
	d, n := shortestDigits(&buf, f)
	return appendECMADigits(dst, f < 0, d, int64(n)), nil
}

// shortestDigits returns the digits of the shortest decimal that reads back
// as |f| (f finite, not 0) and the position n of its decimal point: |f| is
// read from 0.d × 10^n. The digits live in buf.
func shortestDigits(buf *[32]byte, f float64) (d []byte, n int) {
	e := strconv.AppendFloat(buf[:0], math.Abs(f), 'e', -1, 64) // d.ddde±XX
	nd := 1
	i := 1
	if e[1] == '.' {
		for i = 2; e[i] != 'e'; i++ {
			e[nd] = e[i]
			nd++
		}
	}
	x := 0
	for _, b := range e[i+2:] {
		x = x*10 + int(b-'0')
	}
	if e[i+1] == '-' {
		x = -x
	}
	return e[:nd], x + 1
}

// appendECMADigits writes the number 0.d × 10^n (negative when neg; d
// without leading or trailing zeros) in the layout of ECMAScript's
// Number::toString: integers up to 21 digits in full, fixed notation down to
// 1e-6, exponent notation (1.5e+300, 1e-7) beyond.
func appendECMADigits(dst []byte, neg bool, d []byte, n int64) []byte {
	if neg {
		dst = append(dst, '-')
	}
	k := int64(len(d))
	switch {
	case k <= n && n <= 21:
		dst = append(dst, d...)
		for i := k; i < n; i++ {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, d[:n]...)
		dst = append(dst, '.')
		dst = append(dst, d[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for i := n; i < 0; i++ {
			dst = append(dst, '0')
		}
		dst = append(dst, d...)
	default:
		dst = append(dst, d[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, d[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		} else {
			dst = append(dst, '-')
		}
		x := n - 1
		if x < 0 {
			x = -x
		}
		dst = strconv.AppendInt(dst, x, 10)
	}
	return dst
}

// appendBigExponent is appendECMADigits for a literal whose exponent has
// more than 18 digits: the value is 0.d × 10^(point + exp), always written
// in exponent notation.
func appendBigExponent(dst []byte, neg bool, d []byte, point int, exp []byte, expNeg bool) []byte {
	var x big.Int
	x.SetString(string(exp), 10)
	if expNeg {
		x.Neg(&x)
	}
	x.Add(&x, big.NewInt(int64(point)-1)) // exponent of d[0].d[1:]
	if neg {
		dst = append(dst, '-')
	}
	dst = append(dst, d[0])
	if len(d) > 1 {
		dst = append(dst, '.')
		dst = append(dst, d[1:]...)
	}
	dst = append(dst, 'e')
	if x.Sign() >= 0 {
		dst = append(dst, '+')
	}
	return x.Append(dst, 10)
}
