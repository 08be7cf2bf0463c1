package source

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// DefaultWarnEvery is the interval of a WarnLimiter when none is
// configured: one line per (stream, kind) per minute.
const DefaultWarnEvery = time.Minute

// WarnLimiter writes WARN lines that may repeat at a high rate (a flawed
// record per row of a page, a retry per request) at most once per interval
// for each (stream, kind), and counts the lines it held back: the next line
// written for that pair carries suppressed=N, the number of lines not
// written since the previous one. Without it, one unreadable time per
// record wrote 1.8 million lines in a minute.
//
// The pairs are of bounded number (streams and fixed kinds), so its memory
// is bounded too. A nil *WarnLimiter writes nothing. It is safe for
// concurrent use.
type WarnLimiter struct {
	log   *slog.Logger
	clk   Clock
	every time.Duration

	mu    sync.Mutex
	pairs map[warnPair]*warnState
}

type warnPair struct{ stream, kind string }

type warnState struct {
	last       time.Time
	suppressed int64
}

// NewWarnLimiter returns a limiter writing to log, reading time from clk
// (nil: the system clock), one line per (stream, kind) per every (0 or
// less: DefaultWarnEvery). A nil log discards.
func NewWarnLimiter(log *slog.Logger, clk Clock, every time.Duration) *WarnLimiter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if clk == nil {
		clk = SystemClock{}
	}
	if every <= 0 {
		every = DefaultWarnEvery
	}
	return &WarnLimiter{log: log, clk: clk, every: every, pairs: map[warnPair]*warnState{}}
}

// Warn writes msg with args at WARN, adding stream, kind and suppressed,
// unless a line of the same (stream, kind) was written less than the
// interval ago: then the line is only counted. It reports whether the line
// was written.
func (l *WarnLimiter) Warn(ctx context.Context, stream, kind, msg string, args ...any) bool {
	if l == nil {
		return false
	}
	now := l.clk.Now()
	k := warnPair{stream, kind}
	l.mu.Lock()
	st := l.pairs[k]
	if st == nil {
		st = &warnState{}
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
