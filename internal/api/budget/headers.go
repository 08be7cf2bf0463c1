package budget

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Headers are the RateLimit-* headers of one response (CONTRACT C4). A
// field whose header is absent or unreadable has its Has flag false.
type Headers struct {
	Limit, Remaining       int
	Reset                  time.Duration
	HasLimit, HasRemaining bool
	HasReset               bool
}

// Any reports whether at least one RateLimit header was read.
func (h Headers) Any() bool { return h.HasLimit || h.HasRemaining || h.HasReset }

// ParseHeaders reads RateLimit-Limit, RateLimit-Remaining and
// RateLimit-Reset (seconds, integer or decimal). Garbage is ignored: the
// headers steer pacing, they never fail a request.
func ParseHeaders(h http.Header) Headers {
	var r Headers
	if n, ok := headerInt(h.Get("RateLimit-Limit")); ok && n > 0 {
		r.Limit, r.HasLimit = n, true
	}
	if n, ok := headerInt(h.Get("RateLimit-Remaining")); ok {
		r.Remaining, r.HasRemaining = max(n, 0), true
	}
	if s := strings.TrimSpace(h.Get("RateLimit-Reset")); s != "" {
		if f, err := strconv.ParseFloat(s, 64); err == nil && f >= 0 && f < 1e7 {
			r.Reset, r.HasReset = time.Duration(f*float64(time.Second)), true
		}
	}
	return r
}

func headerInt(s string) (int, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	// Some servers send a policy suffix ("480;w=3600"): read the number.
	if i := strings.IndexAny(s, ";, "); i > 0 {
		s = s[:i]
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f < -1e9 || f > 1e9 {
			return 0, false
		}
		n = int(f)
	}
	return n, true
}

// Clamp caps Reset at period (C4: a token comes back within one period; a
// reset of 9999999 s would put a stream to sleep for months).
func (h Headers) Clamp(period time.Duration) Headers {
	if h.HasReset && period > 0 && h.Reset > period {
		h.Reset = period
	}
	return h
}
