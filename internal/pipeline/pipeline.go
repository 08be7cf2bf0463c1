package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/recheck"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source"
)

// Producer pulls one stream into the pipeline; *source.Poller is one. Run
// gets the stream's cursor as last committed and the stream's own Output,
// through which it reserves room and hands pages on (every record it
// fetched: the pipeline's re-ask filter leaves out what the stream holds
// already); it returns nil when the producer is done (once mode, caught
// up) and ctx's error when stopped. Learner is the stream's learner, which
// the filter tells what each page added (nil: none); New asks for it once.
type Producer interface {
	Stream() record.Stream
	Run(ctx context.Context, from cursor.Cursor, out source.Output) error
	Learner() recheck.Observer
}

// Pipeline moves pages from producers through a bounded buffer to every
// sink (its targets) and commits each stream's progress over the pages
// that every sink acknowledged.
type Pipeline struct {
	cfg       Config
	store     Store
	targets   []*target
	producers []Producer
	log       *slog.Logger
	m         *metrics
	now       func() time.Time

	slots   *slots
	pending atomic.Int64 // records of pages handed on and not yet finished by every sink
	tracker *tracker
	// once is each stream's re-ask filter: made by New for its producers,
	// and anew for a producer Add starts (onceMu guards the map).
	onceMu  sync.Mutex
	once    map[record.Stream]*once
	rows    atomic.Int64 // records acknowledged (by every sink) by this run
	lastAck atomic.Int64 // unix nanoseconds of the last page every sink acknowledged
	busy    atomic.Int64 // unix nanoseconds since when records wait, 0 when none
	commitE atomic.Value // last commit error (errBox)

	// running holds the producers at work (producers.go); failures holds
	// the streams a permanent sink error stopped.
	running  running
	failMu   sync.Mutex
	failures map[record.Stream]error

	// acknowledged, when set (OnAcknowledged), sees every page every sink
	// acknowledged (not yet committed: "delivered" is what the
	// checkpoint's delivered set holds).
	acknowledged func(*record.Batch)
}

// OnAcknowledged makes fn see every batch of records once every sink
// acknowledged it, after the batch's room in the buffer was given back
// (the tap, package tap). fn is called from the sink workers, maybe
// concurrently; it must not block, nor change or keep the batch, which
// the sinks may still read. Call OnAcknowledged before Run.
func (p *Pipeline) OnAcknowledged(fn func(*record.Batch)) { p.acknowledged = fn }

// item is one page on its way to every sink. Each sink's worker finishes
// with it once (acknowledged or dropped); the last one gives its room back
// and, when every sink acknowledged it, acknowledges it to the tracker.
type item struct {
	key    record.Stream
	seq    uint64
	page   cursor.Page   // as the producer emitted it, its Batch.Seq set
	batch  *record.Batch // &page.Batch, nil for an empty page; shared by the sinks: read-only
	held   int           // slots held
	handed time.Time

	left   atomic.Int32 // sinks not finished with it yet
	missed atomic.Bool  // a sink finished without acknowledging it
}

func (it *item) records() int {
	if it.batch == nil {
		return 0
	}
	return len(it.batch.Envelopes)
}

// New builds a pipeline of one producer per stream into the sinks of
// targets (Run needs at least one; their names must differ). Every page
// goes to every sink; each sink has pipeline.sink_workers workers of its
// own. reg receives the pipeline's metrics; now may be nil for time.Now.
func New(cfg Config, store Store, targets []Target, producers []Producer, reg prometheus.Registerer, log *slog.Logger, now func() time.Time) *Pipeline {
	if now == nil {
		now = time.Now
	}
	p := &Pipeline{cfg: cfg, store: store, producers: producers, log: log, now: now,
		slots: newSlots(cfg.BufferRecords, now), failures: map[record.Stream]error{}}
	p.m = newMetrics(reg, p)
	for _, t := range targets {
		p.targets = append(p.targets, newTarget(t, p.m, max(cfg.SinkWorkers, 1)))
	}
	// Every stream's series at 0 from the start, before Run loads the
	// checkpoint and recovers the sinks (which may take a while).
	p.once = make(map[record.Stream]*once, len(producers))
	for _, pr := range producers {
		p.m.initStream(pr.Stream(), p.targets)
		p.once[pr.Stream()] = newOnce(store, pr.Stream(), pr.Learner(), p.m)
	}
	// The tracker exists before Run loads it, so that a scrape meanwhile
	// reads empty states rather than racing with Run.
	p.tracker = newTracker(nil)
	p.running.started = make(chan struct{})
	p.m.capacity.Set(float64(cfg.BufferRecords))
	return p
}

// Run loads the checkpoint, runs every producer and the sink workers, and
// returns when ctx is cancelled (a stop) or every producer returned (once
// mode); Add, Remove and Restart change the producers meanwhile. Either way it stops the producers first, drains what was fetched into
// the sinks (for at most StopTimeout after a stop), commits, and returns. The
// sinks must be started; Run does not shut them down.
//
// A batch a sink refuses with a permanent error (sink.IsPermanent) is
// not retried: its stream stops for every sink (see Failures; the
// checkpoint cannot pass the refused page), while the others go on, and
// Run's error names it. Run's error also holds the producers' own
// errors and a failed final commit; a stop by ctx is no error.
func (p *Pipeline) Run(ctx context.Context) error {
	if len(p.targets) == 0 {
		return errors.New("pipeline: no sink")
	}
	initial, err := p.store.All(ctx)
	if err != nil {
		return fmt.Errorf("load checkpoint: %w", err)
	}
	p.tracker.load(initial)
	if err := p.recoverSinks(ctx); err != nil {
		return err
	}
	from := make(map[record.Stream]cursor.Cursor, len(p.producers))
	for _, pr := range p.producers {
		k := pr.Stream()
		if from[k], err = p.resumeFrom(ctx, k, initial[k]); err != nil {
			return fmt.Errorf("load checkpoint of %s: %w", k, err)
		}
	}
	for k, st := range initial {
		p.observe(k, st)
	}
	// The sink workers and the committer outlive a stop by up to
	// StopTimeout, so they get their own context.
	workCtx, cancelWork := context.WithCancel(context.Background())
	defer cancelWork()
	var workers sync.WaitGroup
	for _, t := range p.targets {
		for _, q := range t.queues {
			for range t.workersPerQueue {
				workers.Add(1)
				go func() {
					defer workers.Done()
					p.work(workCtx, t, q)
				}()
			}
		}
	}
	commitDone := make(chan struct{})
	commitStop := make(chan struct{})
	go func() {
		defer close(commitDone)
		p.commitLoop(workCtx, commitStop)
	}()

	// Each producer runs under a context of its own, which a permanent
	// sink error of its stream cancels (or Remove, producers.go).
	pollErrs := p.startProducers(ctx, from)

	// Producers are gone: nobody sends any more; drain.
	for _, t := range p.targets {
		for _, q := range t.queues {
			close(q)
		}
	}
	drained := make(chan struct{})
	go func() { workers.Wait(); close(drained) }()
	if ctx.Err() != nil {
		p.log.Info("stopping: draining fetched pages into the sinks", "buffered_records", p.pending.Load(), "deadline", p.cfg.StopTimeout)
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
	return errors.Join(pollErrs, p.failed(), cerr)
}
