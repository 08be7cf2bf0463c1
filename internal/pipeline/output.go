package pipeline

import (
	"context"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source"
)

// output is the source.Output of one stream's producer: the room it
// reserved before fetching its next page, and the way its pages enter the
// buffer. Only the producer's goroutine uses it.
type output struct {
	p      *Pipeline
	stream record.Stream
	held   int   // records of room reserved for the next Emit
	once   *once // the stream's re-ask filter
}

var _ source.Output = (*output)(nil)

func (p *Pipeline) output(k record.Stream) *output {
	return &output{p: p, stream: k, once: p.onceOf(k)}
}

// Reserve takes room for a page from the buffer before the page is
// fetched, so that pages being fetched count against
// pipeline.buffer_records too. A stream that already holds enough keeps
// it; one that needs more (a bigger page) takes the difference if it is
// free at once, and otherwise gives back what it holds and waits for the
// whole amount, so that it never waits while holding room (see slots).
func (o *output) Reserve(ctx context.Context, rows int) error {
	if rows == 0 {
		// A stream that waits after a failed fetch holds nothing
		// (source.Output.Reserve).
		o.release()
		return nil
	}
	return o.grow(ctx, rows)
}

// grow makes o hold room for at least rows records (clamped to the
// capacity), without waiting while it holds any. On error o holds nothing.
func (o *output) grow(ctx context.Context, rows int) error {
	s := o.p.slots
	rows = s.clamp(rows)
	if o.held >= rows {
		return nil
	}
	n, err := s.exchange(ctx, o.held, rows)
	o.held = n
	return err
}

// release returns what a stopped producer still held.
func (o *output) release() {
	o.p.slots.release(o.held)
	o.held = 0
}

// Emit puts a page into the buffer: into the queue of every sink. The
// stream's re-ask filter (once) first leaves out the records the stream
// holds already, delivered or in flight. It blocks while the buffer is
// full, or a sink's queue: that is the backpressure that keeps memory
// flat. The page holds its room until every sink has finished with it, so
// a slow sink holds the others back.
func (o *output) Emit(ctx context.Context, pg cursor.Page) error {
	p := o.p
	pg, err := o.once.filter(ctx, pg)
	if err != nil {
		return err
	}
	// A page larger than the room reserved for it (the server sent more
	// than the configured page size) trades the reservation for the whole
	// page rather than waiting for the rest while holding it.
	need := p.slots.clamp(len(pg.Batch.Envelopes))
	if err := o.grow(ctx, need); err != nil {
		return err
	}
	held := need
	p.slots.release(o.held - need)
	o.held = 0
	p.pending.Add(int64(held))
	p.busy.CompareAndSwap(0, p.now().UnixNano())
	p.m.buffered.Set(float64(p.pending.Load()))
	it := &item{key: o.stream, seq: p.tracker.next(o.stream), page: pg, held: held}
	o.once.emitted(it.seq, pg.Delivered)
	if len(pg.Batch.Envelopes) > 0 {
		it.page.Batch.Seq = it.seq
		it.batch = &it.page.Batch
	}
	it.handed = p.now()
	it.left.Store(int32(len(p.targets)))
	for i, t := range p.targets {
		t.hand(it)
		select {
		case t.queue(o.stream) <- it:
		case <-ctx.Done():
			// The sinks from t on never see the page (those before may
			// write it): it is never acknowledged, the producer stops and
			// the next run fetches it again. Nothing is committed past it.
			for _, rest := range p.targets[i:] {
				p.finish(rest, it, false)
			}
			return ctx.Err()
		}
	}
	return nil
}

// onceOf returns stream k's re-ask filter (nil when k has no producer).
func (p *Pipeline) onceOf(k record.Stream) *once {
	p.onceMu.Lock()
	defer p.onceMu.Unlock()
	return p.once[k]
}
