package status

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/vbauerster/cupwriter"
)

// SnapshotFunc returns the state lines now and a note saying where they
// come from ("live from the running collector at ...").
type SnapshotFunc func(ctx context.Context) (states []StreamState, from string, err error)

// WatchOptions shape Watch.
type WatchOptions struct {
	// Every is the time between two snapshots.
	Every time.Duration
	// JSON prints each snapshot as JSON (one line each when not on a
	// terminal) instead of a table.
	JSON bool
	// Terminal redraws each snapshot in place of the previous one; off,
	// snapshots follow one another (a pipe, a log file).
	Terminal bool
}

// Watch prints a snapshot every o.Every until ctx ends, and returns nil
// then. A table starts with a line saying when and from where; JSON
// carries only the states, and where they come from goes to notes when it
// changes. A snapshot that fails is shown as its error (on notes, for
// JSON) and the watch goes on.
func Watch(ctx context.Context, out, notes io.Writer, o WatchOptions, snap SnapshotFunc) error {
	if o.Every <= 0 {
		o.Every = 2 * time.Second
	}
	var cw *cupwriter.Writer
	if o.Terminal {
		cw = cupwriter.New(out, true)
	}
	t := time.NewTicker(o.Every)
	defer t.Stop()
	lastFrom := ""
	for {
		states, from, err := snap(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var frame bytes.Buffer
		switch {
		case o.JSON:
			if err != nil {
				fmt.Fprintf(notes, "# %s: %v\n", time.Now().Format(time.TimeOnly), err)
				break
			}
			if from != lastFrom {
				fmt.Fprintf(notes, "# %s\n", from)
				lastFrom = from
			}
			if o.Terminal {
				_ = Print(&frame, states, true)
			} else if err := json.NewEncoder(&frame).Encode(states); err != nil {
				return err
			}
		default:
			fmt.Fprintf(&frame, "collector state at %s, every %s", time.Now().Format(time.TimeOnly), o.Every)
			if from != "" {
				fmt.Fprintf(&frame, " (%s)", from)
			}
			frame.WriteString("\n")
			if err != nil {
				fmt.Fprintf(&frame, "error: %v\n", err)
			} else if err := Print(&frame, states, false); err != nil {
				return err
			}
			if !o.Terminal {
				frame.WriteString("\n")
			}
		}
		if frame.Len() > 0 {
			if cw != nil {
				cw.Write(frame.Bytes())
				if err := cw.Flush(strings.Count(frame.String(), "\n")); err != nil {
					return err
				}
			} else if _, err := out.Write(frame.Bytes()); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
