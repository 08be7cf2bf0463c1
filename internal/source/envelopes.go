package source

import (
	"encoding/json"
	"log/slog"
	"time"

	"github.com/svcexport/collector/internal/ratelog"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/window"
)

// envelopeBuilder turns the records of pages into envelopes (C7). It is not
// safe for concurrent use; each poller has its own.
type envelopeBuilder struct {
	source, account, timeField string
	b                          record.Builder
	log                        *slog.Logger
	m                          *Metrics
	// warn writes the flawed-record warnings, one per (stream, reason)
	// per interval; nil writes none.
	warn *ratelog.Limiter
}

// build returns the envelopes of records fetched in window w.
//
// A bad record never blocks the good ones (record.Flaw): a record whose
// time cannot be read is delivered with Time = the window's start (where
// the API filed it); one with invalid UTF-8, or that is not JSON at all,
// is delivered repaired with its original bytes kept
// (record.Envelope.Original). Each flaw is counted
// (collector_bad_records_total{reason}) and logged, rate-limited.
func (e *envelopeBuilder) build(records []json.RawMessage, w window.Window, fetchedAt time.Time) ([]record.Envelope, error) {
	out := make([]record.Envelope, 0, len(records))
	for _, raw := range records {
		env, flaw := e.b.Build(e.source, e.account, e.timeField, w.Start, w.End, fetchedAt, raw)
		for bit := record.Flaw(1); flaw != 0 && bit != 0; bit <<= 1 {
			if flaw&bit != 0 {
				e.flawed(w, env.ID, bit.String(), nil)
			}
		}
		out = append(out, env)
	}
	return out, nil
}
