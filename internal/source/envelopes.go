package source

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/window"
)

// envelopeBuilder turns the records of pages into envelopes (C7). It is not
// safe for concurrent use; each poller has its own.
type envelopeBuilder struct {
	source, account, timeField string
	b                          record.Builder
	h                          record.Hasher
	log                        *slog.Logger
	m                          *Metrics
	// warn writes the flawed-record warnings, one per (stream, reason)
	// per interval; nil writes none.
	warn *WarnLimiter
}

// build returns the envelopes of records fetched in window w.
//
// A record whose time cannot be read is not dropped and does not fail the
// page (the page would fail again on every retry and block the stream):
// it is delivered with Time = the window's start, which is where the API
// filed it, and it is logged and counted (collector_bad_records_total).
// Only a record that is not JSON at all fails the page, and parsePage
// already guarantees that each one is a JSON object.
func (e *envelopeBuilder) build(records []json.RawMessage, w window.Window, fetchedAt time.Time) ([]record.Envelope, error) {
	out := make([]record.Envelope, 0, len(records))
	for i, raw := range records {
		env, err := e.b.Build(e.source, e.account, e.timeField, w.Start, w.End, fetchedAt, raw)
		if err != nil {
			id, idErr := e.h.ID(e.source, raw)
			if idErr != nil {
				return nil, fmt.Errorf("record %d: %w", i, idErr)
			}
			e.flawed(w, id, timeFlawReason(err), err)
			env = record.Envelope{
				ID: id, Source: e.source, Account: e.account, Time: w.Start,
				WindowStart: w.Start, WindowEnd: w.End, FetchedAt: fetchedAt, Record: raw,
			}
		}
		out = append(out, env)
	}
	return out, nil
}
