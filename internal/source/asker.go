package source

import (
	"context"
	"encoding/json"
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source/pagescan"
	"github.com/svcexport/collector/internal/window"
)

// A run is the revisit.Asker of its poller's rechecks and alert re-asks
// (package revisit): they fetch, build and emit through it.

// Fetch implements revisit.Asker.
func (r *run) Fetch(ctx context.Context, w window.Window, next string, idx int, recheck bool) (pagescan.Body, time.Time, error) {
	f, err := r.fetchAs(ctx, w, next, idx, recheck)
	if err != nil {
		return pagescan.Body{}, time.Time{}, err
	}
	return f.body, f.received, nil
}

// Emit implements revisit.Asker: Revisit pages with the cursor as it
// stands.
func (r *run) Emit(ctx context.Context, w window.Window, idx int, records []json.RawMessage, received time.Time, lc *LogChanges) error {
	return r.emitRecords(ctx, w, idx, records, received, r.cur, true, &emitExtra{log: func() *LogChanges { return lc }})
}

// Envelopes implements revisit.Asker.
func (r *run) Envelopes(records []json.RawMessage, w window.Window, received time.Time) ([]record.Envelope, error) {
	return r.p.eb.Build(records, w, received)
}

// SplitTooLarge implements revisit.Asker.
func (r *run) SplitTooLarge(ctx context.Context, w window.Window, err error, ask func(context.Context, window.Window) error) error {
	return r.splitTooLarge(ctx, w, err, ask)
}
