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

// work writes the batches of q, one of t's queues, to t's sink until the
// queue is closed and empty or ctx ends, one at a time: for a sink.InOrder
// sink, whose every queue has one worker, a stream's batches reach the
// sink in Seq order. Once this worker dropped a batch of a stream, it
// writes no later one of that stream in this run (none of them could be
// committed).
func (p *Pipeline) work(ctx context.Context, t *target, q <-chan *item) {
	dropped := map[record.Stream]bool{}
	for it := range q {
		if dropped[it.key] {
			p.finish(t, it, false)
			continue
		}
		if ctx.Err() != nil || p.stopped(it.key) {
			// A stop deadline, or a stream a permanent error stopped: the
			// page is never acknowledged and comes again after a restart.
			dropped[it.key] = true
			p.finish(t, it, false)
			continue
		}
		if b := t.unstored(it.batch); b != nil {
			err := p.write(ctx, t, b)
			if sink.IsPermanent(err) {
				p.fail(t, it.key, it.batch, err)
			}
			// Only a stop deadline or a permanent error ends the retries.
			// A batch written while its stream was being stopped is not
			// acknowledged either: nothing after the refused batch is.
			if err != nil || p.stopped(it.key) {
				dropped[it.key] = true
				p.finish(t, it, false)
				continue
			}
		}
		p.finish(t, it, true)
	}
}

// finish records that t is done with it: acknowledged, or dropped (not
// acknowledged). The last sink to finish gives the page's room back and,
// when every sink acknowledged it, acknowledges it to the tracker: a page
// is delivered when every sink has it.
func (p *Pipeline) finish(t *target, it *item, acked bool) {
	t.done(it)
	now := p.now()
	if acked {
		t.batchDuration.Observe(now.Sub(it.handed).Seconds())
	} else {
		it.missed.Store(true)
	}
	if it.left.Add(-1) > 0 {
		return
	}
	if it.missed.Load() {
		p.slots.release(it.held)
		p.m.buffered.Set(float64(p.pending.Add(-int64(it.held))))
		return
	}
	rows := it.records()
	if rows > 0 {
		p.m.delivered.WithLabelValues(p.m.lv(it.key)...).Add(float64(rows))
		p.rows.Add(int64(rows))
	}
	p.m.lastAckUnixTime.Set(float64(now.UnixNano()) / 1e9)
	p.lastAck.Store(now.UnixNano())
	p.tracker.ack(it.key, it.seq, ackedPage{after: it.page.After, revisit: it.page.Revisit, log: it.page.Log, delivered: it.page.Delivered, rows: rows}, now)
	p.slots.release(it.held)
	inUse := p.pending.Add(-int64(it.held))
	p.m.buffered.Set(float64(inUse))
	if inUse == 0 {
		p.busy.Store(0)
	} else {
		p.busy.Store(now.UnixNano())
	}
	// Last, once the page's room is back: a tap (OnAcknowledged) costs the
	// producers nothing, whatever it does with the batch.
	if p.acknowledged != nil && rows > 0 {
		p.acknowledged(it.batch)
	}
}

// write hands b to t's sink until it is acknowledged; it gives up when ctx
// ends and at once on a permanent error (sink.IsPermanent), which it
// returns: repeating the same batch cannot cure it. Each sink retries its
// own failed writes; the others go on meanwhile, as far as the buffer
// lets them.
func (p *Pipeline) write(ctx context.Context, t *target, b *record.Batch) error {
	// Equal jitter: a refused write is never repeated at once.
	policy := backoff.Policy{Initial: p.cfg.RetryInitial, Max: p.cfg.RetryMax, Jitter: backoff.Equal}
	for attempt := 1; ; attempt++ {
		wctx, cancel := context.WithTimeout(ctx, p.cfg.SinkTimeout)
		err := t.Sink.Write(wctx, b)
		cancel()
		if err == nil {
			t.writeE.Store(errBox{})
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t.writeE.Store(errBox{&writeError{
			msg: oneLine(fmt.Sprintf("write %d records of %s/%s page %d to the sink %s: %v", len(b.Envelopes), b.Source, b.Account, b.Page, t.Name, err)),
			err: err,
		}})
		if sink.IsPermanent(err) {
			return err
		}
		wait := policy.Wait(attempt - 1)
		p.log.Warn("sink write failed; retrying", "sink", t.Name, "source", b.Source, "account", b.Account, "page", b.Page,
			"records", len(b.Envelopes), "attempt", attempt, "retry_in", wait.Round(time.Millisecond), "err", err)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// WriteError returns the errors of the sinks whose most recent Write
// failed with no Write succeeding since (see SinkWriteError), joined, and
// nil when there are none (also before any Write). With one sink it is
// that sink's error itself.
func (p *Pipeline) WriteError() error {
	var errs []error
	for _, t := range p.targets {
		if err := t.writeError(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// SinkWriteError returns the error of the most recent failed Write of the
// sink named name when no Write of it has succeeded since, and nil
// otherwise (also before any Write, and for a name no sink has), for
// /readyz: a sink may say it is ready while every write fails (a full
// disk). The message is one line of bounded length; errors.Is and
// errors.As see the sink's error. A Write cut short by a stop does not
// count. It is safe for concurrent use.
func (p *Pipeline) SinkWriteError(name string) error {
	for _, t := range p.targets {
		if t.Name == name {
			return t.writeError()
		}
	}
	return nil
}

func (t *target) writeError() error {
	if v, ok := t.writeE.Load().(errBox); ok {
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

// fail stops stream k after the sink of t refused its batch b for good
// (err): the stream is marked failed (Failures, collector_stream_failed),
// its producer's context is cancelled, and nothing of b or of any later
// page of k is acknowledged, by any sink, so its checkpoint stays before b
// and a restart after the cause is fixed delivers it. The other streams go
// on.
func (p *Pipeline) fail(t *target, k record.Stream, b *record.Batch, err error) {
	p.m.permanentErrors.WithLabelValues(p.m.lv(k, t.Name)...).Inc()
	p.failMu.Lock()
	if _, done := p.failures[k]; done {
		p.failMu.Unlock()
		return
	}
	ferr := fmt.Errorf("stream %s stopped: the sink %s refused %d records of page %d of [%s, %s) for good: %w",
		k, t.Name, len(b.Envelopes), b.Page, record.FormatTime(b.WindowStart), record.FormatTime(b.WindowEnd), err)
	p.failures[k] = ferr
	p.failMu.Unlock()
	p.tracker.fail(k)
	p.m.streamFailed.WithLabelValues(p.m.lv(k)...).Set(1)
	p.log.Error("sink refused a batch for good; the stream stops, for every sink, until a restart", "sink", t.Name, "source", k.Source, "account", k.Account,
		"window_start", record.FormatTime(b.WindowStart), "page", b.Page, "records", len(b.Envelopes), "err", err)
	p.stopProducer(k, ferr)
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
