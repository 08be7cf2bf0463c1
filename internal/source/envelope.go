package source

import (
	"context"
	"encoding/json"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/svcexport/collector/internal/ratelog"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/window"
)

// envelopeBuilder turns the records of pages into envelopes (C7). It is not safe
// for concurrent use; each poller has its own. Set its fields before the
// first Build.
type envelopeBuilder struct {
	// Tenant, Source, Account and TimeField are the stream's tenant
	// (every envelope's), source, its envelope account and the records'
	// time member.
	Tenant, Source, Account, TimeField string
	// RecordAccount takes each envelope's account from the record's
	// account_name member, Account when it has none: an edge answer
	// holds the records of every account (C6).
	RecordAccount bool
	// Metrics count the flawed records; nil counts none.
	Metrics *Metrics
	// Warn writes the flawed-record warnings, one per (stream, reason)
	// per interval; nil writes none.
	Warn *ratelog.Limiter
	b    record.Builder
}

// Build returns the envelopes of records fetched in window w.
//
// A bad record never blocks the good ones (record.Flaw): a record whose
// time cannot be read is delivered with Time = the window's start (where
// the API filed it); one with invalid UTF-8, or that is not JSON at all,
// is delivered repaired with its original bytes kept
// (record.Envelope.Original). Each flaw is counted
// (collector_bad_records_total{reason}) and logged, rate-limited.
func (e *envelopeBuilder) Build(records []json.RawMessage, w window.Window, fetchedAt time.Time) ([]record.Envelope, error) {
	out := make([]record.Envelope, 0, len(records))
	for _, raw := range records {
		account := e.Account
		if e.RecordAccount {
			account = recordAccount(raw, account)
		}
		env, flaw := e.b.Build(e.Source, account, e.TimeField, w.Start, w.End, fetchedAt, raw)
		env.Tenant = e.Tenant
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

// flawed counts and reports one record of window w delivered with a flaw:
// collector_bad_records_total{source,account,reason} grows by one, and a
// WARN line is written at most once per (stream, reason) per interval,
// carrying how many were held back since the last one. reason is one of
// BadRecordReasons; err, when not nil, says what was wrong.
func (e *envelopeBuilder) flawed(w window.Window, id, reason string, err error) {
	e.Metrics.BadRecord(e.Source, e.Account, reason)
	args := []any{"source", e.Source, "account", e.Account, "reason", BadRecordReason(reason),
		"window_start", record.FormatTime(w.Start), "record_id", id}
	if err != nil {
		args = append(args, "err", err.Error())
	}
	e.Warn.Warn(context.Background(), e.Source+"/"+e.Account, "bad_record_"+BadRecordReason(reason),
		"record delivered with a flaw; a time flaw files it at the window start", args...)
}
