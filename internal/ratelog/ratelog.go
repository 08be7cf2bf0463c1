package ratelog

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// DefaultEvery is the interval of a Limiter when none is configured: one
// line per (stream, kind) per minute.
const DefaultEvery = time.Minute

// Limiter writes WARN lines that may repeat at a high rate (a flawed
// record per row of a page, a retry per request) at most once per interval
// for each (stream, kind), and counts the lines it held back: the next line
// written for that pair carries suppressed=N, the number of lines not
// written since the previous one. Without it, one unreadable time per
// record wrote 1.8 million lines in a minute.
//
// The pairs are of bounded number (streams and fixed kinds), so its memory
// is bounded too. A nil *Limiter writes nothing. It is safe for concurrent
// use.
type Limiter struct {
	log   *slog.Logger
	now   func() time.Time
	every time.Duration

	mu    sync.Mutex
	pairs map[pair]*state
}

type pair struct{ stream, kind string }

type state struct {
	last       time.Time
	suppressed int64
}

// New returns a limiter writing to log, reading time from now (nil:
// time.Now), one line per (stream, kind) per every (0 or less:
// DefaultEvery). A nil log discards.
func New(log *slog.Logger, now func() time.Time, every time.Duration) *Limiter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	if every <= 0 {
		every = DefaultEvery
	}
	return &Limiter{log: log, now: now, every: every, pairs: map[pair]*state{}}
}

// Every returns the limiter's interval; 0 for a nil limiter.
func (l *Limiter) Every() time.Duration {
	if l == nil {
		return 0
	}
	return l.every
}

// Warn writes msg with args at WARN, adding stream, kind and suppressed,
// unless a line of the same (stream, kind) was written less than the
// interval ago: then the line is only counted. It reports whether the line
// was written.
func (l *Limiter) Warn(ctx context.Context, stream, kind, msg string, args ...any) bool {
	if l == nil {
		return false
	}
	now := l.now()
	k := pair{stream, kind}
	l.mu.Lock()
	st := l.pairs[k]
	if st == nil {
		st = &state{}
		l.pairs[k] = st
	} else if now.Sub(st.last) < l.every {
		st.suppressed++
		l.mu.Unlock()
		return false
	}
	n := st.suppressed
	st.last, st.suppressed = now, 0
	l.mu.Unlock()
	all := make([]any, 0, len(args)+6)
	all = append(append(all, args...), "stream", stream, "kind", kind, "suppressed", n)
	l.log.Log(ctx, slog.LevelWarn, msg, all...)
	return true
}
