// Package envelope turns the records of a page into C7 envelopes for one
// stream (Builder): the envelope account (an edge record's own
// account_name, C6), the record's time read leniently, the C7 id, and
// the records delivered with a flaw (record.Flaw), each counted in
// collector_bad_records_total and warned about, rate-limited.
//
// It owns nothing but that conversion: it makes no request, keeps no
// cursor, and never drops a record (a bad one is delivered, repaired or
// filed at its window's start). Package source gives each poller one
// Builder, used from its Run goroutine only.
package envelope
