package pipeline

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/svcexport/collector/internal/backoff"
	"github.com/svcexport/collector/internal/record"
)

// work writes batches until the queue is closed and empty or ctx ends.
func (p *Pipeline) work(ctx context.Context) {
	for it := range p.queue {
		if ctx.Err() != nil {
			p.slots.release(it.held)
			p.pending.Add(-int64(it.held))
			continue
		}
		if it.batch != nil {
			if err := p.write(ctx, it.batch); err != nil {
				// Only a stop deadline ends the retries: the page is not
				// acknowledged and comes again after the restart.
				p.slots.release(it.held)
				p.pending.Add(-int64(it.held))
				continue
			}
		}
		rows := 0
		if it.batch != nil {
			rows = len(it.batch.Envelopes)
			p.m.delivered.WithLabelValues(it.key.Source, it.key.Account).Add(float64(rows))
			p.rows.Add(int64(rows))
		}
		p.m.batchDuration.Observe(p.now().Sub(it.handed).Seconds())
		now := p.now()
		p.m.lastAckUnixTime.Set(float64(now.UnixNano()) / 1e9)
		p.lastAck.Store(now.UnixNano())
		p.tracker.ack(it.key, it.seq, ackedPage{after: it.after, revisit: it.revisit, rows: rows}, p.now())
		p.slots.release(it.held)
		inUse := p.pending.Add(-int64(it.held))
		p.m.buffered.Set(float64(inUse))
		if inUse == 0 {
			p.busy.Store(0)
		} else {
			p.busy.Store(now.UnixNano())
		}
	}
}

// write hands b to the sink until it is acknowledged; it gives up only when
// ctx ends.
func (p *Pipeline) write(ctx context.Context, b *record.Batch) error {
	// Equal jitter: a refused write is never repeated at once.
	policy := backoff.Policy{Initial: p.cfg.RetryInitial, Max: p.cfg.RetryMax, Jitter: backoff.Equal}
	for attempt := 1; ; attempt++ {
		wctx, cancel := context.WithTimeout(ctx, p.cfg.SinkTimeout)
		err := p.sink.Write(wctx, b)
		cancel()
		if err == nil {
			p.writeE.Store(errBox{})
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p.m.sinkErrors.Inc()
		p.writeE.Store(errBox{&writeError{
			msg: oneLine(fmt.Sprintf("write %d records of %s/%s page %d to the sink: %v", len(b.Envelopes), b.Source, b.Account, b.Page, err)),
			err: err,
		}})
		wait := policy.Wait(attempt - 1)
		p.log.Warn("sink write failed; retrying", "source", b.Source, "account", b.Account, "page", b.Page,
			"records", len(b.Envelopes), "attempt", attempt, "retry_in", wait.Round(time.Millisecond), "err", err)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// WriteError returns the error of the most recent failed sink Write when no
// Write has succeeded since, and nil otherwise (also before any Write), for
// /readyz: a sink may say it is ready while every write fails (a full disk).
// The message is one line of bounded length; errors.Is and errors.As see
// the sink's error. A Write cut short by a stop does not count. It is safe
// for concurrent use.
func (p *Pipeline) WriteError() error {
	if v, ok := p.writeE.Load().(errBox); ok {
		return v.err
	}
	return nil
}

// writeError is a failed sink Write as WriteError reports it.
type writeError struct {
	msg string // one line
	err error
}

func (e *writeError) Error() string { return e.msg }
func (e *writeError) Unwrap() error { return e.err }

// maxErrorLen bounds the message of WriteError, so that a sink quoting a
// whole server response does not flood /readyz.
const maxErrorLen = 512

// oneLine turns control characters (newlines included) and runs of spaces
// into single spaces and cuts s to maxErrorLen bytes on a rune boundary.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)), " ")
	if len(s) <= maxErrorLen {
		return s
	}
	cut := maxErrorLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
