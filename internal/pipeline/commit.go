package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
)

// Store is what the pipeline needs of the checkpoint: the states, and
// the window logs and alert marks that commit with them (Apply).
type Store interface {
	All(ctx context.Context) (map[record.Stream]checkpoint.State, error)
	Apply(ctx context.Context, c checkpoint.Changes) error
	Windows(ctx context.Context, k record.Stream) ([]cursor.LoggedWindow, error)
	Alerts(ctx context.Context, k record.Stream) (map[string]cursor.AlertMark, error)
	// DeliveredOf and DeliveredEnd read a stream's delivered set as
	// committed (the re-ask filter, once).
	DeliveredOf(ctx context.Context, k record.Stream, keys []cursor.Delivered) ([]int, error)
	DeliveredEnd(ctx context.Context, k record.Stream) (time.Time, error)
	Marks(ctx context.Context) (map[string][]byte, error)
	Held(ctx context.Context) (map[string]map[record.Stream][]cursor.Delivered, error)
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
	dirty, next := p.tracker.takeDirtyNext()
	logs := p.tracker.takeLogs()
	if len(dirty) == 0 && logs.Empty() {
		return nil
	}
	logs.States = dirty
	marks, err := p.marks(ctx, next)
	if err == nil {
		logs.Marks = marks
		start := p.now()
		err = p.store.Apply(ctx, logs)
		p.m.commitDuration.Observe(p.now().Sub(start).Seconds())
	}
	if err != nil {
		p.tracker.putBack(dirty)
		p.tracker.putBackLogs(logs)
		p.m.commitErrors.Inc()
		p.commitE.Store(errBox{err})
		p.log.Error("checkpoint commit failed; will retry", "streams", len(dirty), "err", err)
		return err
	}
	p.commitE.Store(errBox{})
	p.m.commits.Inc()
	p.tracker.setCommitted(next)
	for k, n := range next {
		// The re-ask filter learns it directly: the keys of the pages
		// below n are in the checkpoint's delivered set now.
		if o := p.onceOf(k); o != nil {
			o.released(n)
		}
	}
	for k, st := range dirty {
		p.observe(k, st)
	}
	for _, t := range p.targets {
		if o, ok := t.Sink.(sink.CommitObserver); ok {
			for k, n := range next {
				o.Committed(k, n)
			}
		}
	}
	return nil
}

// cursorOf is the cursor a poller resumes from: the stream's state as
// committed.
func cursorOf(st checkpoint.State) cursor.Cursor { return st.Cursor.Clone() }

// resumeFrom is the cursor stream k resumes from: its state, window log
// and alert marks as committed.
func (p *Pipeline) resumeFrom(ctx context.Context, k record.Stream, st checkpoint.State) (cursor.Cursor, error) {
	c := cursorOf(st)
	var err error
	if c.Log, err = p.store.Windows(ctx, k); err != nil {
		return c, fmt.Errorf("load window log: %w", err)
	}
	if c.Alerts, err = p.store.Alerts(ctx, k); err != nil {
		return c, fmt.Errorf("load alert marks: %w", err)
	}
	if len(c.Log) == 0 {
		c.Log = nil
	}
	if len(c.Alerts) == 0 {
		c.Alerts = nil
	}
	return c, nil
}
