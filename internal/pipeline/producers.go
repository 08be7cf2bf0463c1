package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// The producers of a running pipeline: Run starts those given to New, Add
// starts more, Remove stops one after its pages are committed, Restart
// replaces one (a configuration reload, issue 33). Every other producer
// goes on meanwhile: nothing here touches the buffer, the sinks' queues or
// another stream's context.

// ErrRemoved is the cause of the context of a producer that Remove or
// Restart stopped.
var ErrRemoved = errors.New("stream removed from the configuration")

// running is the producers at work and what Run waits for. Its fields are
// guarded by mu.
type running struct {
	mu   sync.Mutex
	ctx  context.Context // Run's; nil before Run starts the producers
	runs map[record.Stream]*run
	// active counts the producers not yet returned and the changes under
	// way (Add, Remove, Restart): Run ends in once mode when it drops to
	// 0 (idle closed), never in the middle of a change.
	active  int
	idle    chan struct{}
	started chan struct{} // closed once Run started the producers (Running)
	closed  bool          // Run stops: no producer starts any more
	wg      sync.WaitGroup
	errs    []error
}

// run is one producer at work.
type run struct {
	pr   Producer
	stop context.CancelCauseFunc
	done chan struct{} // closed when its Run returned
}

// startProducers starts every producer of New from its cursor in from,
// under Run's ctx, and returns when ctx ends or every producer returned
// (once mode): then it stops them all, waits for them and returns their
// errors.
func (p *Pipeline) startProducers(ctx context.Context, from map[record.Stream]cursor.Cursor) error {
	r := &p.running
	r.mu.Lock()
	r.ctx, r.runs, r.idle = ctx, make(map[record.Stream]*run, len(p.producers)), make(chan struct{})
	for _, pr := range p.producers {
		p.startLocked(pr, from[pr.Stream()])
	}
	if r.active == 0 {
		close(r.idle)
	}
	close(r.started)
	r.mu.Unlock()
	select {
	case <-ctx.Done():
	case <-r.idle:
	}
	r.mu.Lock()
	r.closed = true
	for _, rn := range r.runs {
		rn.stop(context.Cause(ctx))
	}
	r.mu.Unlock()
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}

// startLocked starts pr from cursor from; its pages are numbered from
// base on (tracker.rebase). r.mu is held.
func (p *Pipeline) startLocked(pr Producer, from cursor.Cursor) {
	r := &p.running
	k := pr.Stream()
	ctx, stop := context.WithCancelCause(r.ctx)
	rn := &run{pr: pr, stop: stop, done: make(chan struct{})}
	r.runs[k] = rn
	r.active++
	r.wg.Add(1)
	p.m.pollersRunning.Inc()
	go func() {
		defer r.wg.Done()
		defer p.m.pollersRunning.Dec()
		defer close(rn.done)
		out := p.output(k)
		err := pr.Run(ctx, from, out)
		out.release()
		stop(nil)
		if err != nil && !errors.Is(err, context.Canceled) {
			p.log.Error("poller ended", "source", k.Source, "account", k.Account, "err", err)
			r.mu.Lock()
			r.errs = append(r.errs, fmt.Errorf("poller %s: %w", k, err))
			r.mu.Unlock()
		}
		p.release()
	}()
}

// Running is closed once Run started the producers: from then on Add,
// Remove and Restart apply (until Run stops them).
func (p *Pipeline) Running() <-chan struct{} { return p.running.started }

// hold counts a change under way, so that Run does not end in the middle
// of it; release ends it (or a producer's run).
func (p *Pipeline) hold() error {
	r := &p.running
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx == nil || r.closed {
		return errors.New("pipeline: not running")
	}
	r.active++
	return nil
}

func (p *Pipeline) release() {
	r := &p.running
	r.mu.Lock()
	defer r.mu.Unlock()
	r.active--
	if r.active == 0 && r.idle != nil {
		select {
		case <-r.idle:
		default:
			close(r.idle)
		}
	}
}

// stopProducer cancels the producer of stream k with cause (nothing when
// none runs).
func (p *Pipeline) stopProducer(k record.Stream, cause error) {
	r := &p.running
	r.mu.Lock()
	defer r.mu.Unlock()
	if rn := r.runs[k]; rn != nil {
		rn.stop(cause)
	}
}

// Streams returns the streams whose producers run now, sorted. It is safe
// for concurrent use.
func (p *Pipeline) Streams() []record.Stream {
	r := &p.running
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.runs == nil {
		out := make([]record.Stream, len(p.producers))
		for i, pr := range p.producers {
			out[i] = pr.Stream()
		}
		return sortStreams(out)
	}
	out := make([]record.Stream, 0, len(r.runs))
	for k := range r.runs {
		out = append(out, k)
	}
	return sortStreams(out)
}

func sortStreams(ks []record.Stream) []record.Stream {
	slices.SortFunc(ks, func(a, b record.Stream) int { return strings.Compare(a.String(), b.String()) })
	return ks
}

// Add starts pr on a running pipeline, from its stream's state as
// committed, while every other producer goes on. Its stream must not run
// already, nor have been stopped by a permanent sink error (a restart
// resumes that one). The stream's series are created at 0 first.
func (p *Pipeline) Add(ctx context.Context, pr Producer) error {
	if err := p.hold(); err != nil {
		return err
	}
	defer p.release()
	return p.add(ctx, pr)
}

func (p *Pipeline) add(ctx context.Context, pr Producer) error {
	k := pr.Stream()
	if p.stopped(k) {
		return fmt.Errorf("stream %s was stopped by a sink's permanent error: it resumes after a restart", k)
	}
	r := &p.running
	r.mu.Lock()
	_, dup := r.runs[k]
	r.mu.Unlock()
	if dup {
		return fmt.Errorf("stream %s runs already", k)
	}
	st := p.tracker.stateOf(k)
	from, err := p.resumeFrom(ctx, k, st)
	if err != nil {
		return fmt.Errorf("load checkpoint of %s: %w", k, err)
	}
	p.m.initStream(k, p.targets)
	p.observe(k, st)
	p.tracker.rebase(k)
	// A fresh filter: the keys the one before held for pages abandoned
	// when it stopped (never committed) must not leave their records out
	// of the new producer's pages, which fetch them again. What the
	// stopped producer's committed pages held is in the checkpoint's
	// delivered set, which the new filter reads.
	p.onceMu.Lock()
	p.once[k] = newOnce(p.store, k, pr.Learner(), p.m)
	p.onceMu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errors.New("pipeline: stopping")
	}
	if _, dup := r.runs[k]; dup {
		return fmt.Errorf("stream %s runs already", k)
	}
	p.startLocked(pr, from)
	return nil
}

// Remove stops the producer of stream k and returns once the pages it
// emitted are finished by every sink and what they acknowledged is
// committed: its checkpoint state stays for a later Add or run. A page
// being fetched is abandoned (it comes again when the stream is added
// back). When ctx ends first, Remove returns its error; the stream's
// pages still go on to the sinks and their commit.
func (p *Pipeline) Remove(ctx context.Context, k record.Stream) error {
	if err := p.hold(); err != nil {
		return err
	}
	defer p.release()
	return p.remove(ctx, k)
}

func (p *Pipeline) remove(ctx context.Context, k record.Stream) error {
	r := &p.running
	r.mu.Lock()
	rn := r.runs[k]
	delete(r.runs, k)
	r.mu.Unlock()
	if rn == nil {
		return fmt.Errorf("stream %s does not run", k)
	}
	rn.stop(ErrRemoved)
	select {
	case <-rn.done:
	case <-ctx.Done():
		return fmt.Errorf("stop stream %s: %w", k, context.Cause(ctx))
	}
	return p.settle(ctx, k)
}

// Restart replaces the producer of pr's stream by pr (its settings
// changed): the old one stops and its pages are committed (Remove), then
// pr starts from the committed state (Add). The other producers go on.
func (p *Pipeline) Restart(ctx context.Context, pr Producer) error {
	if err := p.hold(); err != nil {
		return err
	}
	defer p.release()
	if err := p.remove(ctx, pr.Stream()); err != nil {
		return err
	}
	return p.add(ctx, pr)
}

// settleEvery is how often settle looks again.
const settleEvery = 20 * time.Millisecond

// settle waits until no sink holds a page of stream k and what they
// acknowledged of it is committed.
func (p *Pipeline) settle(ctx context.Context, k record.Stream) error {
	t := time.NewTicker(settleEvery)
	defer t.Stop()
	for !p.settled(k) {
		select {
		case <-t.C:
		case <-ctx.Done():
			return fmt.Errorf("wait for the pages of stream %s to be committed: %w", k, context.Cause(ctx))
		}
	}
	return nil
}

// settled reports whether no sink holds a page of stream k and its
// acknowledged run is committed.
func (p *Pipeline) settled(k record.Stream) bool {
	for _, t := range p.targets {
		if t.holds(k) {
			return false
		}
	}
	return p.tracker.settled(k)
}

// holds reports whether a page of stream k is pending for t.
func (t *target) holds(k record.Stream) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for it := range t.pending {
		if it.key == k {
			return true
		}
	}
	return false
}
