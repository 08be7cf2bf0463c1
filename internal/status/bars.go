package status

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/vbauerster/cupwriter"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// SourceProgress is how far one source (all its accounts) got through the
// backlog it had when this run started.
type SourceProgress struct {
	Source string
	// Percent is the part of the backlog done, 0 to 100 (by time covered:
	// watermark moved / (moved + still behind)).
	Percent float64
	// RowsPerSecond is the rate delivered over the last few seconds.
	RowsPerSecond float64
	// ETA is the time left to catch up; ETAKnown is false until the
	// watermarks moved.
	ETA      time.Duration
	ETAKnown bool
	// CaughtUp is set when every stream of the source caught up.
	CaughtUp bool
}

// Display shows the progress of every source while the collector runs;
// Reporter calls Show a few times a second and Close once at the end.
type Display interface {
	Show(sources []SourceProgress)
	Close()
}

// IsTerminal reports whether f is a terminal (a TTY) that something can be
// drawn on: one that reports no size (a pseudo-terminal nobody sized) is
// not taken for one.
func IsTerminal(f *os.File) bool {
	cw := cupwriter.New(f, false)
	if !cw.IsTerminal() {
		return false
	}
	w, h, err := cw.GetTermSize()
	return err == nil && w > 0 && h > 0
}

// barScale is a bar's total: a tenth of a percent per step.
const barScale = 1000

// Bars is the live progress display on a terminal: one bar per source
// with its percent done, rows a second and ETA, drawn by
// github.com/vbauerster/mpb. Lines written to Bars (the logs) appear above
// the bars; after Close they go straight to the terminal.
type Bars struct {
	out io.Writer
	p   *mpb.Progress

	mu     sync.Mutex // bars, closed; never taken by mpb's goroutines
	bars   map[string]*mpb.Bar
	closed bool

	stateMu sync.Mutex // what the decorators read while mpb draws
	state   map[string]SourceProgress
}

// NewBars starts the display on out, which should be a terminal; refresh
// is how often it is redrawn (0: 200 ms).
func NewBars(out io.Writer, refresh time.Duration) *Bars {
	if refresh <= 0 {
		refresh = 200 * time.Millisecond
	}
	return &Bars{
		out:   out,
		p:     mpb.New(mpb.WithOutput(out), mpb.WithRefreshRate(refresh), mpb.WithAutoRefresh()),
		bars:  map[string]*mpb.Bar{},
		state: map[string]SourceProgress{},
	}
}

// Write prints b (whole lines) above the bars.
func (d *Bars) Write(b []byte) (int, error) {
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if !closed {
		if n, err := d.p.Write(b); err == nil {
			return n, nil
		}
	}
	return d.out.Write(b)
}

// Show updates the bars, adding one for a source seen the first time.
func (d *Bars) Show(sources []SourceProgress) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	for _, s := range sources {
		d.stateMu.Lock()
		d.state[s.Source] = s
		d.stateMu.Unlock()
		b := d.bars[s.Source]
		if b == nil {
			b = d.addBar(s.Source)
			d.bars[s.Source] = b
		}
		// A bar is completed only by Close: a source that caught up may
		// fall behind again while the daemon tails.
		b.SetCurrent(min(int64(s.Percent*barScale/100), barScale-1))
	}
}

func (d *Bars) addBar(name string) *mpb.Bar {
	info := func(decor.Statistics) string {
		d.stateMu.Lock()
		s := d.state[name]
		d.stateMu.Unlock()
		eta := "unknown"
		switch {
		case s.CaughtUp:
			eta = "caught up"
		case s.ETAKnown:
			eta = roundDuration(s.ETA)
		}
		return fmt.Sprintf("%5.1f%%  %6s rows/s  ETA %-9s", s.Percent, humanRate(s.RowsPerSecond), eta)
	}
	return d.p.AddBar(barScale,
		mpb.PrependDecorators(decor.Name(name, decor.WC{C: decor.DindentRight | decor.DSyncWidth})),
		mpb.AppendDecorators(decor.Any(info, decor.WC{C: decor.DindentRight | decor.DextraSpace | decor.DSyncWidth})),
	)
}

// Close draws the bars a last time and stops the display. Bars of
// sources that caught up end full; the others where they stood.
func (d *Bars) Close() {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	for name, b := range d.bars {
		d.stateMu.Lock()
		caught := d.state[name].CaughtUp
		d.stateMu.Unlock()
		if caught {
			b.SetCurrent(barScale)
		} else {
			b.SetTotal(-1, true)
		}
	}
	d.mu.Unlock()
	d.p.Wait()
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
}

// humanRate writes a rate with a k or M suffix.
func humanRate(r float64) string {
	switch {
	case r >= 1e6:
		return fmt.Sprintf("%.1fM", r/1e6)
	case r >= 1e4:
		return fmt.Sprintf("%.0fk", r/1e3)
	default:
		return fmt.Sprintf("%.0f", r)
	}
}
