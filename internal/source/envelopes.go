package source

import (
	"encoding/json"
	"log/slog"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/svcexport/collector/internal/ratelog"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/window"
)

// envelopeBuilder turns the records of pages into envelopes (C7). It is not
// safe for concurrent use; each poller has its own.
type envelopeBuilder struct {
	source, account, timeField string
	// recordAccount takes each envelope's account from the record's
	// account_name member, account when it has none: an edge answer
	// holds the records of every account (C6).
	recordAccount bool
	b             record.Builder
	log           *slog.Logger
	m             *Metrics
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
		account := e.account
		if e.recordAccount {
			account = recordAccount(raw, account)
		}
		env, flaw := e.b.Build(e.source, account, e.timeField, w.Start, w.End, fetchedAt, raw)
		for bit := record.Flaw(1); flaw != 0 && bit != 0; bit <<= 1 {
			if flaw&bit != 0 {
				e.flawed(w, env.ID, bit.String(), nil)
			}
		}
		out = append(out, env)
	}
	return out, nil
}

// recordAccount returns the account_name member of an edge record (C6),
// or def when it has none, it is not a string, or it is no usable account
// name (empty, padded, a control character).
func recordAccount(raw []byte, def string) string {
	var x struct {
		AccountName *string `json:"account_name"`
	}
	if json.Unmarshal(raw, &x) != nil || x.AccountName == nil {
		return def
	}
	a := *x.AccountName
	if a == "" || strings.TrimSpace(a) != a || strings.ContainsFunc(a, unicode.IsControl) || !utf8.ValidString(a) {
		return def
	}
	return a
}
