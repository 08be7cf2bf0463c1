package source

import (
	"context"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source/pollmetrics"
	"github.com/svcexport/collector/internal/window"
)

// flawed counts and reports one record of window w delivered with a flaw:
// collector_bad_records_total{source,account,reason} grows by one, and a
// WARN line is written at most once per (stream, reason) per interval,
// carrying how many were held back since the last one. reason is one of
// BadRecordReasons; err, when not nil, says what was wrong.
func (e *envelopeBuilder) flawed(w window.Window, id, reason string, err error) {
	e.m.BadRecord(e.source, e.account, reason)
	args := []any{"source", e.source, "account", e.account, "reason", pollmetrics.BadRecordReason(reason),
		"window_start", record.FormatTime(w.Start), "record_id", id}
	if err != nil {
		args = append(args, "err", err.Error())
	}
	e.warn.Warn(context.Background(), e.source+"/"+e.account, "bad_record_"+pollmetrics.BadRecordReason(reason),
		"record delivered with a flaw; a time flaw files it at the window start", args...)
}
