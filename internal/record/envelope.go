package record

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// Envelope is one record as the collector delivers it (CONTRACT C7). Record
// holds the bytes exactly as the API sent them; nothing else of the record is
// decoded but its time.
type Envelope struct {
	// ID is the stable record id (see ID).
	ID string
	// Source is the source name of C3 or C6, e.g. "dns" or "edge_alerts".
	Source string
	// Account is the sub-account name, or "org" for organization-level data.
	Account string
	// Time is the record time, UTC.
	Time time.Time
	// WindowStart and WindowEnd bound the window the record was fetched in.
	WindowStart, WindowEnd time.Time
	// FetchedAt is when the page holding the record arrived.
	FetchedAt time.Time
	// Record is the raw record. The envelope does not own a copy: it may
	// share the page's buffer, which nobody modifies after decoding.
	Record []byte
}

// OrgAccount is the account name of organization-level data (C7).
const OrgAccount = "org"

// Builder turns raw records of one page into envelopes. The zero value is
// ready to use; a Builder is not safe for concurrent use.
type Builder struct {
	buf []byte
	c   canon
}

// Build makes the envelope of raw, a record of source fetched for account in
// window [start, end). timeField names the record's time member (C3, C6).
// The id is computed from the canonical form of raw; a record whose time
// cannot be read is an error, so that no record is silently misfiled.
func (b *Builder) Build(source, account, timeField string, start, end, fetchedAt time.Time, raw []byte) (Envelope, error) {
	b.buf = append(b.buf[:0], source...)
	b.buf = append(b.buf, '\n')
	var fieldRaw []byte
	var err error
	b.buf, fieldRaw, err = b.c.run(b.buf, raw, timeField)
	if err != nil {
		return Envelope{}, fmt.Errorf("%s record: %w", source, err)
	}
	t, err := ParseTime(fieldRaw)
	if err != nil {
		return Envelope{}, fmt.Errorf("%s record field %s: %w", source, timeField, err)
	}
	sum := sha256.Sum256(b.buf)
	return Envelope{
		ID:          hex.EncodeToString(sum[:]),
		Source:      source,
		Account:     account,
		Time:        t,
		WindowStart: start,
		WindowEnd:   end,
		FetchedAt:   fetchedAt,
		Record:      raw,
	}, nil
}

// AppendJSON appends the envelope as one JSON object (no newline): the C7
// fields in a fixed order with the record embedded verbatim.
func (e *Envelope) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"id":"`...)
	dst = append(dst, e.ID...)
	dst = append(dst, `","source":`...)
	dst = appendJCSString(dst, e.Source)
	dst = append(dst, `,"account":`...)
	dst = appendJCSString(dst, e.Account)
	dst = append(dst, `,"time":"`...)
	dst = AppendTime(dst, e.Time)
	dst = append(dst, `","window_start":"`...)
	dst = AppendTime(dst, e.WindowStart)
	dst = append(dst, `","window_end":"`...)
	dst = AppendTime(dst, e.WindowEnd)
	dst = append(dst, `","fetched_at":"`...)
	dst = AppendTime(dst, e.FetchedAt)
	dst = append(dst, `","record":`...)
	dst = append(dst, e.Record...)
	return append(dst, '}')
}

// AppendNDJSON appends the envelope as one NDJSON line, newline included.
// The record is embedded verbatim except that CR and LF become spaces:
// outside strings they are insignificant JSON whitespace, and inside strings
// JSON forbids them raw, so the record's meaning (and id) is unchanged while a
// pretty-printed record can no longer break the one-envelope-per-line
// framing.
func (e *Envelope) AppendNDJSON(dst []byte) []byte {
	start := len(dst)
	dst = e.AppendJSON(dst)
	line := dst[start:]
	for i, c := range line {
		if c == '\n' || c == '\r' {
			line[i] = ' '
		}
	}
	return append(dst, '\n')
}

// Size is an estimate of the envelope's encoded size in bytes, for metrics
// and buffer sizing.
func (e *Envelope) Size() int { return len(e.Record) + 230 + len(e.Source) + len(e.Account) }

// Batch is the unit that travels from a poller to a sink and is acknowledged
// as a whole: the records of one page, in the order the API sent them. A
// batch may be empty (an empty window still has to move the checkpoint).
type Batch struct {
	// Source and Account name the stream the batch belongs to.
	Source, Account string
	// WindowStart and WindowEnd bound the window of the page.
	WindowStart, WindowEnd time.Time
	// Page is the page's index in its window's chain, from 0.
	Page int
	// Seq orders the batches of one stream; the pipeline assigns it.
	Seq uint64
	// Envelopes are the records of the page.
	Envelopes []Envelope
}

// Bytes returns the total size of the batch's raw records.
func (b *Batch) Bytes() int {
	n := 0
	for i := range b.Envelopes {
		n += len(b.Envelopes[i].Record)
	}
	return n
}
