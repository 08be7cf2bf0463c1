// Package verify proves, after the fact, that a sink holds every record
// the API has: `collector verify` re-counts committed windows against the
// API, one (stream, UTC day) at a time, and compares with the distinct
// records the sink delivered for the same part of the day.
//
//   - NewPlan: from the checkpoint (streams, watermarks, window logs) and
//     the command's filters (source, account, from, to), the (stream,
//     day) targets and an estimate of the API requests they cost (one
//     first page per day for a core source; a day whose rows may pass the
//     500,000 cap (C3), or an edge day whose rows may pass max_rows (C6),
//     is counted in parts), printed as a dry run before anything is asked.
//   - Delivered: what a sink holds per target, distinct records by id
//     (edge alerts by uuid: an alert delivered in several versions is one
//     alert, C6). FileSink reads the NDJSON files, ClickHouse queries the
//     tables, Kafka reads the topics from their start to the end offsets
//     taken when it begins.
//   - Counter: the API's count of one window. verify/apicount has the one
//     on the API client (a core window's first-page totalRows, an edge
//     window's rows), which the command wires in; Splitting asks again in
//     halves when an answer may be cut.
//   - Run and Report: per target the API count and the delivered count,
//     "gap" (the API has more: records lost, or late ones not yet
//     rechecked: Row.Pending says which windows still have a recheck to
//     come), "extra" (the sink has more: retention or deletion at the
//     source), printed as a table or JSON; ExitCode is 1 when there is a
//     gap.
//
// It reads the checkpoint's types and the sinks' data; it never writes to
// a sink, the checkpoint or the API, and must not import the API client,
// internal/source, internal/pipeline, internal/app or verify/apicount
// (internal/archtest holds the rule).
package verify
