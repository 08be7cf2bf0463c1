package record

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Envelope is one record as the collector delivers it (CONTRACT C7). Record
// holds the bytes exactly as the API sent them, unless Build had to repair
// them (see Flaw); nothing else of the record is decoded but its time.
type Envelope struct {
	// ID is the stable record id (see ID and Builder.Build).
	ID string
	// Tenant is the configured tenant the record was read for; "" in the
	// one-tenant form, and then absent from the JSON. The id does not
	// depend on it: the same record of two tenants has the same id, and
	// the tenant tells them apart.
	Tenant string
	// Source is the source name of C3 or C6, e.g. "dns" or "edge_alerts".
	Source string
	// Account is the sub-account name, or "org" for organization-level data.
	Account string
	// Time is the record time, UTC; the window start when the record's
	// time could not be read (see Flaw).
	Time time.Time
	// WindowStart and WindowEnd bound the window the record was fetched in.
	WindowStart, WindowEnd time.Time
	// FetchedAt is when the page holding the record arrived.
	FetchedAt time.Time
	// Snapshot marks a record read by an inventory walk (agent_info's
	// inventory): the state of an entity as of Time, the moment the walk
	// began, rather than an event of its window; false for every record
	// of a window. Its ID is the C7 id of the record as for any record, so
	// the same state has the same id and a new state a new one.
	Snapshot bool
	// Record is the raw record: valid JSON always. The envelope does not
	// own a copy: it may share the page's buffer, which nobody modifies
	// after decoding. For a record with FlawInvalidUTF8 it is a repaired
	// copy, for one with FlawNotJSON the JSON null.
	Record []byte
	// Original is nil for every ordinary record. When Record is not the
	// record as sent (FlawInvalidUTF8, FlawNotJSON), it holds the exact
	// bytes as sent, from which the id was computed; like Record it may
	// share the page's buffer.
	Original []byte
}

// OrgAccount is the account name of organization-level data (C7).
const OrgAccount = "org"

// Flaw is the set of defects Build found in a record and worked around
// instead of failing it (a failed record would fail its page on every
// retry and block its stream). The zero value is an ordinary record. A
// poller counts and logs flawed records; a sink delivers them like any
// other.
type Flaw uint8

const (
	// FlawInvalidUTF8: a string of the record held bytes that are not
	// UTF-8. Record is a repaired copy in which each such byte became
	// U+FFFD, Original the record as sent; the id and the time are those
	// of Original and of the repaired copy respectively.
	FlawInvalidUTF8 Flaw = 1 << iota
	// FlawNotJSON: the record is not one well-formed JSON value even
	// leniently (a bad escape, a control character in a string, truncated,
	// data after the value, nested deeper than 256). Record is null,
	// Original the bytes as sent, Time the window start (no time flaw is
	// added), and the id is the lowercase hex SHA-256 of the source name,
	// one newline byte, one 0xFF byte and the bytes as sent. Canonical
	// JSON never starts with 0xFF, so this id never equals the id of a
	// JSON record.
	FlawNotJSON
	// FlawTimeMissing: the record has no time member, or it is null, or the
	// record is no object. Time is the window start.
	FlawTimeMissing
	// FlawTimeUnreadable: the time member is neither an ISO 8601 time nor
	// an epoch number (see ParseTime). Time is the window start.
	FlawTimeUnreadable
	// FlawTimeOutOfRange: the time member is readable but not finite or
	// outside [1970-01-01T00:00:00Z, 9999-12-31T23:59:59Z] (see
	// ErrTimeOutOfRange). Time is the window start.
	FlawTimeOutOfRange
)

// FlawTime is the set of flaws that put a record at its window's start.
const FlawTime = FlawTimeMissing | FlawTimeUnreadable | FlawTimeOutOfRange

// flawNames are the names String gives the flaws, in bit order.
const flawNames = "invalid_utf8 not_json time_missing time_unreadable time_out_of_range"

// String names the flaws of f joined by "|", e.g.
// "invalid_utf8|time_unreadable", or "none" for the zero value. The names
// are stable: use them as metric label values.
func (f Flaw) String() string {
	if f == 0 {
		return "none"
	}
	var out []byte
	bit := Flaw(1)
	for name := range strings.FieldsSeq(flawNames) {
		if f&bit != 0 {
			if len(out) > 0 {
				out = append(out, '|')
			}
			out = append(out, name...)
		}
		bit <<= 1
	}
	if rest := f &^ (bit - 1); rest != 0 {
		if len(out) > 0 {
			out = append(out, '|')
		}
		out = fmt.Appendf(out, "flaw(%#x)", uint8(rest))
	}
	return string(out)
}

// Builder turns raw records of one page into envelopes. The zero value is
// ready to use; a Builder is not safe for concurrent use.
type Builder struct {
	buf []byte
	c   canon
}

// Build makes the envelope of raw, a record of source fetched for account in
// window [start, end); timeField names the record's time member (C3, C6).
// It never fails: what it found wrong with the record, and worked around,
// is returned as a Flaw (zero for an ordinary record; see each Flaw for
// what the envelope then holds). The id is that of ID for every record
// that is JSON, invalid UTF-8 or not, and the 0xFF id of FlawNotJSON for
// every other. The envelope shares raw; Build keeps no reference to it.
func (b *Builder) Build(source, account, timeField string, start, end, fetchedAt time.Time, raw []byte) (Envelope, Flaw) {
	env := Envelope{
		Source:      source,
		Account:     account,
		Time:        start,
		WindowStart: start,
		WindowEnd:   end,
		FetchedAt:   fetchedAt,
		Record:      raw,
	}
	b.buf = append(b.buf[:0], source...)
	b.buf = append(b.buf, '\n')
	out, fieldRaw, err := b.c.run(b.buf, raw, timeField)
	if err != nil {
		b.buf = append(b.buf, 0xFF)
		b.buf = append(b.buf, raw...)
		env.ID = sumHex(b.buf)
		env.Record, env.Original = []byte("null"), raw
		return env, FlawNotJSON
	}
	b.buf = out
	env.ID = sumHex(b.buf)
	var flaw Flaw
	if b.c.invalidUTF8 {
		flaw |= FlawInvalidUTF8
		env.Record, env.Original = appendRepairedUTF8(nil, raw), raw
		if fieldRaw != nil {
			fieldRaw = appendRepairedUTF8(nil, fieldRaw)
		}
	}
	t, err := ParseTime(fieldRaw)
	switch {
	case err == nil:
		env.Time = t
	case errors.Is(err, ErrTimeMissing):
		flaw |= FlawTimeMissing
	case errors.Is(err, ErrTimeOutOfRange):
		flaw |= FlawTimeOutOfRange
	default:
		flaw |= FlawTimeUnreadable
	}
	return env, flaw
}

// appendRepairedUTF8 appends s with each byte that is not part of a valid
// UTF-8 sequence replaced by U+FFFD.
func appendRepairedUTF8(dst, s []byte) []byte {
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] < utf8.RuneSelf {
			i++
		}
		dst = append(dst, s[:i]...)
		s = s[i:]
		if len(s) == 0 {
			break
		}
		r, size := utf8.DecodeRune(s)
		if r == utf8.RuneError && size == 1 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
		} else {
			dst = append(dst, s[:size]...)
		}
		s = s[size:]
	}
	return dst
}

// AppendJSON appends the envelope as one JSON object (no newline): the C7
// fields in a fixed order ("snapshot": true after fetched_at for a
// Snapshot, absent otherwise) with the record embedded verbatim, followed, when
// Original is not nil, by "record_base64": the standard base64 of Original.
func (e *Envelope) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"id":"`...)
	dst = append(dst, e.ID...)
	if e.Tenant != "" {
		dst = append(dst, `","tenant":`...)
		dst = appendJCSString(dst, e.Tenant)
		dst = append(dst, `,"source":`...)
	} else {
		dst = append(dst, `","source":`...)
	}
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
	if e.Snapshot {
		dst = append(dst, `","snapshot":true`...)
		dst = append(dst, `,"record":`...)
	} else {
		dst = append(dst, `","record":`...)
	}
	dst = append(dst, e.Record...)
	if e.Original != nil {
		dst = append(dst, `,"record_base64":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, e.Original)
		dst = append(dst, '"')
	}
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
	// IndexByte (vectorised) rather than a loop over every byte: a line
	// rarely holds either.
	for _, c := range [...]byte{'\n', '\r'} {
		for rest := line; ; {
			i := bytes.IndexByte(rest, c)
			if i < 0 {
				break
			}
			rest[i] = ' '
			rest = rest[i+1:]
		}
	}
	return append(dst, '\n')
}

// Size is an estimate of the envelope's encoded size in bytes, for metrics
// and buffer sizing; it counts Original as AppendJSON writes it.
func (e *Envelope) Size() int {
	n := len(e.Record) + 230 + len(e.Source) + len(e.Account)
	if e.Tenant != "" {
		n += len(`,"tenant":""`) + len(e.Tenant)
	}
	if e.Original != nil {
		n += len(`,"record_base64":""`) + base64.StdEncoding.EncodedLen(len(e.Original))
	}
	return n
}

// Batch is the unit that travels from a poller to a sink and is acknowledged
// as a whole: the records of one page, in the order the API sent them. A
// batch may be empty (an empty window still has to move the checkpoint).
type Batch struct {
	// Tenant, Source and Account name the stream the batch belongs to
	// (Tenant "": the one-tenant form).
	Tenant, Source, Account string
	// WindowStart and WindowEnd bound the window of the page.
	WindowStart, WindowEnd time.Time
	// Page is the page's index in its window's chain, from 0.
	Page int
	// Seq orders the batches of one stream; the pipeline assigns it.
	Seq uint64
	// Envelopes are the records of the page.
	Envelopes []Envelope
}

// Stream is the stream the batch belongs to.
func (b *Batch) Stream() Stream {
	return Stream{Tenant: b.Tenant, Source: b.Source, Account: b.Account}
}

// Bytes returns the total size of the batch's raw records, Original
// included where it is set.
func (b *Batch) Bytes() int {
	n := 0
	for i := range b.Envelopes {
		n += len(b.Envelopes[i].Record) + len(b.Envelopes[i].Original)
	}
	return n
}
