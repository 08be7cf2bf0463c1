package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/backoff"
	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/source"
)

// Store is what the pipeline needs of the checkpoint.
type Store interface {
	All(ctx context.Context) (map[record.Stream]checkpoint.State, error)
	CommitMany(ctx context.Context, states map[record.Stream]checkpoint.State) error
}

// Producer pulls one stream into the pipeline; *source.Poller is one. Run
// gets the stream's cursor as last committed and the stream's own Output,
// through which it reserves room and hands pages on; it returns nil when
// the producer is done (once mode, caught up) and ctx's error when
// stopped.
type Producer interface {
	Stream() record.Stream
	Run(ctx context.Context, from source.Cursor, out source.Output) error
}

// Pipeline moves pages from producers through a bounded buffer to a sink
// and commits each stream's progress after its pages are acknowledged.
type Pipeline struct {
	cfg       Config
	store     Store
	sink      sink.Sink
	producers []Producer
	log       *slog.Logger
	m         *metrics
	now       func() time.Time

	slots   *slots
	pending atomic.Int64 // records handed to the sink and not yet acknowledged
	queue   chan *item
	tracker *tracker
	rows    atomic.Int64 // records acknowledged by this run
	lastAck atomic.Int64 // unix nanoseconds of the last acknowledgement
	busy    atomic.Int64 // unix nanoseconds since when records wait, 0 when none
	commitE atomic.Value // last commit error (errBox)
	writeE  atomic.Value // last sink write error since the last success (errBox)
}

type item struct {
	key     record.Stream
	seq     uint64
	batch   *record.Batch
	after   source.Cursor
	revisit bool
	held    int // slots held
	handed  time.Time
}

// New builds a pipeline of one producer per stream. reg receives the
// pipeline's metrics; now may be nil for time.Now.
func New(cfg Config, store Store, s sink.Sink, producers []Producer, reg prometheus.Registerer, log *slog.Logger, now func() time.Time) *Pipeline {
	if now == nil {
		now = time.Now
	}
	p := &Pipeline{cfg: cfg, store: store, sink: s, producers: producers, log: log, m: newMetrics(reg), now: now,
		slots: newSlots(cfg.BufferRecords, now), queue: make(chan *item, 1024)}
	p.m.capacity.Set(float64(cfg.BufferRecords))
	return p
}

// Run loads the checkpoint, runs every producer and the sink workers, and
// returns when ctx is cancelled (a stop) or every producer returned (once
// mode). Either way it stops the producers first, drains what was fetched into
// the sink (for at most StopTimeout after a stop), commits, and returns. The
// sink must be started; Run does not shut it down.
func (p *Pipeline) Run(ctx context.Context) error {
	initial, err := p.store.All(ctx)
	if err != nil {
		return fmt.Errorf("load checkpoint: %w", err)
	}
	p.tracker = newTracker(initial)
	for k, st := range initial {
		p.observe(k, st)
	}

	// The sink workers and the committer outlive a stop by up to
	// StopTimeout, so they get their own context.
	workCtx, cancelWork := context.WithCancel(context.Background())
	defer cancelWork()
	var workers sync.WaitGroup
	for i := 0; i < p.cfg.SinkWorkers; i++ {
		workers.Add(1)
		go func() {
			defer workers.Done()
			p.work(workCtx)
		}()
	}
	commitDone := make(chan struct{})
	commitStop := make(chan struct{})
	go func() {
		defer close(commitDone)
		p.commitLoop(workCtx, commitStop)
	}()

	pollErrs := p.runProducers(ctx, initial)

	// Producers are gone: nobody sends any more; drain.
	close(p.queue)
	drained := make(chan struct{})
	go func() { workers.Wait(); close(drained) }()
	if ctx.Err() != nil {
		p.log.Info("stopping: draining fetched pages into the sink", "buffered_records", p.pending.Load(), "deadline", p.cfg.StopTimeout)
		select {
		case <-drained:
		case <-time.After(p.cfg.StopTimeout):
			p.log.Warn("stop deadline reached: pages not yet written will be fetched again after restart", "buffered_records", p.pending.Load())
			cancelWork()
			<-drained
		}
	} else {
		<-drained
	}
	close(commitStop)
	<-commitDone
	// Final commit of whatever the last acknowledgements moved.
	finalCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cerr := p.commit(finalCtx)
	if cerr != nil {
		cerr = fmt.Errorf("final checkpoint commit: %w", cerr)
	}
	return errors.Join(pollErrs, cerr)
}

func (p *Pipeline) runProducers(ctx context.Context, initial map[record.Stream]checkpoint.State) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, pr := range p.producers {
		wg.Add(1)
		p.m.pollersRunning.Inc()
		go func() {
			defer wg.Done()
			defer p.m.pollersRunning.Dec()
			k := pr.Stream()
			out := p.output(k)
			err := pr.Run(ctx, cursorOf(initial[k]), out)
			out.release()
			if err != nil && !errors.Is(err, context.Canceled) {
				p.log.Error("poller ended", "source", k.Source, "account", k.Account, "err", err)
				mu.Lock()
				errs = append(errs, fmt.Errorf("poller %s: %w", k, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

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

// Stalled returns an error when the pipeline stopped moving for longer than
// StallTimeout: records handed to the sink were not acknowledged (the sink
// or a worker is wedged), or streams wait for room in the buffer and no room
// was granted nor any batch acknowledged (whatever holds the room never
// gives it back). A pipeline with nothing to write and nobody waiting for
// room is never stalled. It is safe for concurrent use.
func (p *Pipeline) Stalled() error {
	now := p.now()
	if since, waiting := p.busy.Load(), p.pending.Load(); since != 0 && waiting != 0 {
		if waited := now.Sub(time.Unix(0, since)); waited > p.cfg.StallTimeout {
			return fmt.Errorf("no batch acknowledged for %v while %d records wait", waited.Round(time.Second), waiting)
		}
	}
	if n, rows, since := p.slots.waiting(); n > 0 {
		if ack := p.lastAck.Load(); ack != 0 && time.Unix(0, ack).After(since) {
			since = time.Unix(0, ack)
		}
		if waited := now.Sub(since); waited > p.cfg.StallTimeout {
			return fmt.Errorf("no room granted and no batch acknowledged for %v while %d streams wait for room for %d records (%d of %d records held)",
				waited.Round(time.Second), n, rows, p.slots.inUse(), p.cfg.BufferRecords)
		}
	}
	return nil
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

// commitLoop commits dirty stream states as acknowledgements move them,
// one transaction at a time (so commits coalesce under load), until stop.
func (p *Pipeline) commitLoop(ctx context.Context, stop <-chan struct{}) {
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-p.tracker.signal:
		case <-tick.C:
			p.observeAll()
		}
		if err := p.commit(ctx); err != nil {
			// Keep the states dirty and try again; readiness reports it.
			select {
			case <-time.After(time.Second):
			case <-stop:
				return
			}
			select {
			case p.tracker.signal <- struct{}{}:
			default:
			}
		}
	}
}

func (p *Pipeline) commit(ctx context.Context) error {
	dirty := p.tracker.takeDirty()
	if len(dirty) == 0 {
		return nil
	}
	start := p.now()
	err := p.store.CommitMany(ctx, dirty)
	p.m.commitDuration.Observe(p.now().Sub(start).Seconds())
	if err != nil {
		p.tracker.putBack(dirty)
		p.m.commitErrors.Inc()
		p.commitE.Store(errBox{err})
		p.log.Error("checkpoint commit failed; will retry", "streams", len(dirty), "err", err)
		return err
	}
	p.commitE.Store(errBox{})
	p.m.commits.Inc()
	for k, st := range dirty {
		p.observe(k, st)
	}
	return nil
}

type errBox struct{ err error }

// CommitError returns the last checkpoint commit error, nil after a
// successful commit (for /readyz).
func (p *Pipeline) CommitError() error {
	if v, ok := p.commitE.Load().(errBox); ok {
		return v.err
	}
	return nil
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

func (p *Pipeline) observe(k record.Stream, st checkpoint.State) {
	if st.Watermark.IsZero() {
		return
	}
	p.m.watermark.WithLabelValues(k.Source, k.Account).Set(float64(st.Watermark.UnixMilli()) / 1e3)
	p.m.lag.WithLabelValues(k.Source, k.Account).Set(p.now().Sub(st.Watermark).Seconds())
}

func (p *Pipeline) observeAll() {
	if p.tracker == nil {
		return
	}
	for k, st := range p.tracker.states() {
		p.observe(k, st)
	}
}

// Delivered returns the records the sink acknowledged since Run began.
func (p *Pipeline) Delivered() int64 { return p.rows.Load() }

// States returns every stream's acknowledged state (what is committed or
// about to be), for the live state endpoint.
func (p *Pipeline) States() map[record.Stream]checkpoint.State {
	if p.tracker == nil {
		return nil
	}
	return p.tracker.states()
}
