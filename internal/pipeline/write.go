package pipeline

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/svcexport/collector/internal/backoff"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
)

// work writes batches until the queue is closed and empty or ctx ends.
func (p *Pipeline) work(ctx context.Context) {
	for it := range p.queue {
		if ctx.Err() != nil || p.stopped(it.key) {
			// A stop deadline, or a stream a permanent error stopped: the
			// page is never acknowledged and comes again after a restart.
			p.drop(it)
			continue
		}
		if it.batch != nil {
			err := p.write(ctx, it.batch)
			if sink.IsPermanent(err) {
				p.fail(it.key, it.batch, err)
			}
			// Only a stop deadline or a permanent error ends the retries.
			// A batch written while its stream was being stopped is not
			// acknowledged either: nothing after the refused batch is.
			if err != nil || p.stopped(it.key) {
				p.drop(it)
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
		p.tracker.ack(it.key, it.seq, ackedPage{after: it.after, revisit: it.revisit, log: it.log, rows: rows}, p.now())
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

// drop gives back the room of a page that is not acknowledged.
func (p *Pipeline) drop(it *item) {
	p.slots.release(it.held)
	p.pending.Add(-int64(it.held))
}

// write hands b to the sink until it is acknowledged; it gives up when ctx
// ends and at once on a permanent error (sink.IsPermanent), which it
// returns: repeating the same batch cannot cure it.
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
		p.writeE.Store(errBox{&writeError{
			msg: oneLine(fmt.Sprintf("write %d records of %s/%s page %d to the sink: %v", len(b.Envelopes), b.Source, b.Account, b.Page, err)),
			err: err,
		}})
		if sink.IsPermanent(err) {
			return err
		}
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

// fail stops stream k after the sink refused its batch b for good (err):
// the stream is marked failed (Failures, collector_stream_failed), its
// producer's context is cancelled, and nothing of b or of any later page
// of k is acknowledged, so its checkpoint stays before b and a restart
// after the cause is fixed delivers it. The other streams go on.
func (p *Pipeline) fail(k record.Stream, b *record.Batch, err error) {
	p.m.permanentErrors.WithLabelValues(k.Source, k.Account).Inc()
	p.failMu.Lock()
	if _, done := p.failures[k]; done {
		p.failMu.Unlock()
		return
	}
	ferr := fmt.Errorf("stream %s stopped: the sink refused %d records of page %d of [%s, %s) for good: %w",
		k, len(b.Envelopes), b.Page, record.FormatTime(b.WindowStart), record.FormatTime(b.WindowEnd), err)
	p.failures[k] = ferr
	p.failMu.Unlock()
	p.tracker.fail(k)
	p.m.streamFailed.WithLabelValues(k.Source, k.Account).Set(1)
	p.log.Error("sink refused a batch for good; the stream stops until a restart", "source", k.Source, "account", k.Account,
		"window_start", record.FormatTime(b.WindowStart), "page", b.Page, "records", len(b.Envelopes), "err", err)
	if stop := p.stops[k]; stop != nil {
		stop(ferr)
	}
}

// stopped reports whether a permanent error stopped stream k.
func (p *Pipeline) stopped(k record.Stream) bool {
	p.failMu.Lock()
	defer p.failMu.Unlock()
	_, ok := p.failures[k]
	return ok
}

// failed joins the errors of the stopped streams, in the order of their
// names; nil when none stopped.
func (p *Pipeline) failed() error {
	fs := p.Failures()
	keys := slices.SortedFunc(maps.Keys(fs), func(a, b record.Stream) int { return strings.Compare(a.String(), b.String()) })
	errs := make([]error, len(keys))
	for i, k := range keys {
		errs[i] = fs[k]
	}
	return errors.Join(errs...)
}

// Failures returns the streams a permanent sink error stopped, with that
// error, for the state of the streams; empty while none did. It is safe
// for concurrent use.
func (p *Pipeline) Failures() map[record.Stream]error {
	p.failMu.Lock()
	defer p.failMu.Unlock()
	return maps.Clone(p.failures)
}
