package pipeline

import (
	"fmt"
	"time"

	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/record"
)

// Stalled returns an error when the pipeline stopped moving for longer than
// StallTimeout: records handed on were not acknowledged by every sink (a
// sink or a worker is wedged), or streams wait for room in the buffer and
// no room was granted nor any batch acknowledged (whatever holds the room
// never gives it back). A pipeline with nothing to write and nobody
// waiting for room is never stalled. The error names the sink that holds
// the oldest page. It is safe for concurrent use.
func (p *Pipeline) Stalled() error {
	now := p.now()
	if since, waiting := p.busy.Load(), p.pending.Load(); since != 0 && waiting != 0 {
		if waited := now.Sub(time.Unix(0, since)); waited > p.cfg.StallTimeout {
			return fmt.Errorf("no batch acknowledged by every sink for %v while %d records wait%s", waited.Round(time.Second), waiting, p.laggard())
		}
	}
	if n, rows, since := p.slots.waiting(); n > 0 {
		if ack := p.lastAck.Load(); ack != 0 && time.Unix(0, ack).After(since) {
			since = time.Unix(0, ack)
		}
		if waited := now.Sub(since); waited > p.cfg.StallTimeout {
			return fmt.Errorf("no room granted and no batch acknowledged for %v while %d streams wait for room for %d records (%d of %d records held)%s",
				waited.Round(time.Second), n, rows, p.slots.inUse(), p.cfg.BufferRecords, p.laggard())
		}
	}
	return nil
}

// laggard names the sink whose oldest pending page is the oldest, for
// Stalled; "" when no sink has a page pending.
func (p *Pipeline) laggard() string {
	var worst SinkLag
	for _, l := range p.SinkLags() {
		if l.Pages > 0 && l.Oldest >= worst.Oldest {
			worst = l
		}
	}
	if worst.Sink == "" {
		return ""
	}
	return fmt.Sprintf(" (sink %s: %d records pending, the oldest for %v)", worst.Sink, worst.Records, worst.Oldest.Round(time.Second))
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

func (p *Pipeline) observe(k record.Stream, st checkpoint.State) {
	if st.Watermark.IsZero() {
		return
	}
	p.m.watermark.WithLabelValues(p.m.lv(k)...).Set(float64(st.Watermark.UnixMilli()) / 1e3)
	p.m.lag.WithLabelValues(p.m.lv(k)...).Set(p.now().Sub(st.Watermark).Seconds())
}

func (p *Pipeline) observeAll() {
	for k, st := range p.tracker.states() {
		p.observe(k, st)
	}
}

// Delivered returns the records every sink acknowledged since Run began.
func (p *Pipeline) Delivered() int64 { return p.rows.Load() }

// States returns every stream's acknowledged state (what is committed or
// about to be), for the live state endpoint.
func (p *Pipeline) States() map[record.Stream]checkpoint.State {
	return p.tracker.states()
}

// SinkLags returns every sink's lag, in the order of the targets. It is
// safe for concurrent use.
func (p *Pipeline) SinkLags() []SinkLag {
	now := p.now()
	out := make([]SinkLag, len(p.targets))
	for i, t := range p.targets {
		out[i] = t.lag(now)
	}
	return out
}

// StreamSinkLags returns, for every stream of the producers, every sink's
// lag on that stream (in the order of the targets, zeros included), for
// the state of the streams. It is safe for concurrent use.
func (p *Pipeline) StreamSinkLags() map[record.Stream][]SinkLag {
	now := p.now()
	streams := p.Streams()
	out := make(map[record.Stream][]SinkLag, len(streams))
	for _, k := range streams {
		ls := make([]SinkLag, len(p.targets))
		for i, t := range p.targets {
			ls[i].Sink, ls[i].Delivery = t.Name, t.delivery()
		}
		out[k] = ls
	}
	for i, t := range p.targets {
		t.streamLag(now, i, out)
	}
	return out
}
