package ocsf

import (
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/svcexport/collector/internal/record"
)

// Version is the OCSF schema release every event follows, written as
// metadata.version.
const Version = "1.3.0"

// Defaults of Options.
const (
	DefaultProductName     = "Cloud Security Platform"
	DefaultEdgeProductName = "Edge Access"
	DefaultVendorName      = "SVC"
)

// Options configure a Mapper. The zero value is ready to use.
type Options struct {
	// RawData adds the record as sent, as a JSON string, under raw_data.
	// Default off: it adds the record's size again to every event, and the
	// record is already complete in the mapped attributes plus unmapped.
	RawData bool
	// ProductName is metadata.product.name of the core API's sources;
	// default DefaultProductName.
	ProductName string
	// EdgeProductName is metadata.product.name of the edge sources
	// (edge_audit_events, edge_alerts); default DefaultEdgeProductName.
	EdgeProductName string
	// VendorName is metadata.product.vendor_name (required by OCSF);
	// default DefaultVendorName, the seed's label of the service vendor.
	VendorName string
	// ProductVersion is metadata.product.version; default "": omitted.
	ProductVersion string
}

// Mapper turns envelopes into OCSF events. It is safe for concurrent use:
// its settings do not change after New, and each call takes its scratch
// space from a pool.
type Mapper struct {
	rawData bool
	sources map[string]*source
	recs    sync.Pool // *rec
}

// New returns a Mapper with o's settings.
func New(o Options) *Mapper {
	if o.ProductName == "" {
		o.ProductName = DefaultProductName
	}
	if o.EdgeProductName == "" {
		o.EdgeProductName = DefaultEdgeProductName
	}
	if o.VendorName == "" {
		o.VendorName = DefaultVendorName
	}
	m := &Mapper{rawData: o.RawData, sources: make(map[string]*source)}
	for _, s := range newSources() {
		name := o.ProductName
		if s.edge {
			name = o.EdgeProductName
		}
		var p enc
		p.open("")
		p.str("name", name)
		p.str("vendor_name", o.VendorName)
		if o.ProductVersion != "" {
			p.str("version", o.ProductVersion)
		}
		p.close()
		s.product = p.b
		s.index = make(map[string]int, len(s.fields))
		for i, f := range s.fields {
			s.index[f] = i
		}
		m.sources[s.name] = s
	}
	return m
}

// ErrUnknownSource is wrapped by Append's error for an envelope of a source
// the package has no class for.
var ErrUnknownSource = errors.New("no OCSF class for source")

// Append appends the OCSF event of e to dst as one JSON object on one line
// (no newline) and returns the extended buffer and the number of
// fallbacks: members of the record that the mapping knows but whose value
// could not be converted to its attribute's type (a known field that
// changed type, C3), or that were repeated; each of them is written under
// unmapped as sent instead. Members the mapping does not know go to
// unmapped too but are no fallback, nor is a well-formed value that OCSF
// 1.3.0 has no value for (an HTTP method outside its enum, PATCH).
//
// The record is decoded once. It never fails on a record's content: an
// error means e is nil, its source is unknown (ErrUnknownSource), or its
// Record is not one valid UTF-8 JSON value (record.Builder never makes
// such an envelope); dst is then returned unchanged.
func (m *Mapper) Append(dst []byte, e *record.Envelope) ([]byte, int, error) {
	if e == nil {
		return dst, 0, errors.New("ocsf: nil envelope")
	}
	s := m.sources[e.Source]
	if s == nil {
		return dst, 0, fmt.Errorf("ocsf: %w %q", ErrUnknownSource, e.Source)
	}
	r, _ := m.recs.Get().(*rec)
	if r == nil {
		r = new(rec)
	}
	defer m.recs.Put(r)
	if err := r.scan(s, e.Record); err != nil {
		return dst, 0, fmt.Errorf("ocsf: %s record %s: %w", e.Source, e.ID, err)
	}
	w := enc{b: dst}
	m.event(&w, s, r, e)
	return w.b, r.fallbacks, nil
}

// ClassOf returns the OCSF class uid and name that Append uses for events
// of source, or 0 and "" for a source it does not know.
func ClassOf(source string) (uid int, name string) {
	for _, s := range newSources() {
		if s.name == source {
			return s.class.uid, s.class.name
		}
	}
	return 0, ""
}

// Sources returns the names of the sources Append maps, in CONTRACT order
// (C3, then C6).
func Sources() []string {
	var out []string
	for _, s := range newSources() {
		out = append(out, s.name)
	}
	return out
}

// maxFields bounds the known members of one source (bit masks are uint32).
const maxFields = 32

// member is one top-level member of a record in the order sent; field is
// the index of the known field it is, or -1.
type member struct {
	name, value []byte
	field       int
}

// rec is one record split into its top-level members, with the state of
// its mapping. One Append call uses it at a time (Mapper pools them).
type rec struct {
	object    bool
	raw       []byte            // the record
	f         [maxFields][]byte // value of each known member present
	order     []member          // every member, in the order sent
	buf       [24]member        // backing of order for ordinary records
	done      uint32            // known members an attribute holds in full
	failed    uint32            // known members that could not be converted
	fallbacks int               // conversions that failed, repeats
	x         [10][]byte        // values a source's head found for its body
	scratch   [256]byte         // backing of decoded strings
	spare     []byte            // what is left of scratch
}

// scan splits raw into members, validating it.
func (r *rec) scan(s *source, raw []byte) error {
	if !utf8.Valid(raw) {
		return fmt.Errorf("%w: invalid UTF-8", errInvalidJSON)
	}
	start := skipSpace(raw, 0)
	end, err := skipValue(raw, start, 0)
	if err != nil {
		return err
	}
	if skipSpace(raw, end) != len(raw) {
		return fmt.Errorf("%w: data after the value", errInvalidJSON)
	}
	clear(r.f[:])
	clear(r.x[:])
	r.object, r.done, r.failed, r.fallbacks = false, 0, 0, 0
	r.raw = raw[start:end]
	r.order = r.buf[:0]
	r.spare = r.scratch[:0]
	it, ok := objectMembers(r.raw)
	if !ok {
		return nil
	}
	r.object = true
	for {
		name, value, ok := it.next()
		if !ok {
			break
		}
		idx, known := s.index[string(r.text(name))]
		switch {
		case !known:
			idx = -1
		case r.f[idx] != nil:
			// A repeated member is no field: every occurrence goes to
			// unmapped, counted once.
			r.fallback(idx)
		default:
			r.f[idx] = value
		}
		r.order = append(r.order, member{name: name, value: value, field: idx})
	}
	for i := range r.f {
		if r.failed&(1<<i) != 0 {
			r.f[i] = nil
		}
	}
	return nil
}

// text returns the content of the string token tok: a subslice of tok
// when it holds no escape, else decoded into the scratch space.
func (r *rec) text(tok []byte) []byte {
	c := tok[1 : len(tok)-1]
	for _, b := range c {
		if b == '\\' {
			start := len(r.spare)
			r.spare = appendUnquoted(r.spare, tok)
			return r.spare[start:len(r.spare):len(r.spare)]
		}
	}
	return c
}

// has reports whether known field i is present and not null (a null
// member carries nothing; OCSF leaves the attribute out).
func (r *rec) has(i int) bool { return !isNull(r.f[i]) }

// mapped records that an attribute holds known field i in full.
func (r *rec) mapped(i int) { r.done |= 1 << i }

// fallback records that known field i (or a part of it) could not be
// converted: the member goes to unmapped, counted once.
func (r *rec) fallback(i int) {
	if r.failed&(1<<i) == 0 {
		r.failed |= 1 << i
		r.fallbacks++
	}
}

// isUnmapped reports whether member mb goes to unmapped: unknown, repeated,
// not converted, or known but held by no attribute in full. A known member
// that is null carries nothing and is left out.
func (r *rec) isUnmapped(mb *member) bool {
	if mb.field < 0 {
		return true
	}
	bit := uint32(1) << mb.field
	if r.failed&bit != 0 {
		return true
	}
	return r.done&bit == 0 && !isNull(mb.value)
}

// str returns field i as a string token, or false; a value present but no
// string (or longer than string_t allows) is a fallback.
func (r *rec) str(i int) ([]byte, bool) {
	v := r.f[i]
	if isNull(v) {
		return nil, false
	}
	if !isString(v) || (len(v) > maxString+2 && len(r.text(v)) > maxString) {
		r.fallback(i)
		return nil, false
	}
	return v, true
}

// integer returns field i as an integer (a number or a numeric string),
// or false; any other value present is a fallback.
func (r *rec) integer(i int) (int64, bool) {
	v := r.f[i]
	if isNull(v) {
		return 0, false
	}
	n, ok := parseInt(v)
	if !ok {
		r.fallback(i)
	}
	return n, ok
}

// time returns field i as Unix milliseconds, or false (a fallback when
// present).
func (r *rec) time(i int) (int64, bool) {
	v := r.f[i]
	if isNull(v) {
		return 0, false
	}
	ms, ok := timeMs(v)
	if !ok {
		r.fallback(i)
	}
	return ms, ok
}

// ident is an identifier field: a string token, or an integer that OCSF's
// string_t uid attributes carry as a decimal string.
type ident struct {
	tok []byte
	n   int64
	ok  bool
}

// id reads field i as an identifier; other values present are fallbacks.
func (r *rec) id(i int) ident {
	v := r.f[i]
	if isNull(v) {
		return ident{}
	}
	return r.idOf(i, v)
}

// idOf reads v, a value inside field i, as an identifier.
func (r *rec) idOf(i int, v []byte) ident {
	if isString(v) && len(v) > 2 && len(v) <= maxString+2 {
		return ident{tok: v, ok: true}
	}
	if n, ok := parseInt(v); ok && !isString(v) {
		return ident{n: n, ok: true}
	}
	r.fallback(i)
	return ident{}
}

func (e *enc) id(name string, v ident) {
	if v.tok != nil {
		e.token(name, v.tok)
	} else {
		e.intString(name, v.n)
	}
}

// placeholder is written where OCSF requires an attribute that the record
// does not supply (see docs/ocsf.md).
const placeholder = "Unknown"

// head is what every event states before its class-specific attributes.
type head struct {
	activity     int
	activityName []byte // the source's own value (a string token) for activity 99
	severity     int
	severityName []byte // the source's own value (a JSON string) for severity 99
	status       int    // 0: no status_id
	statusName   []byte // the source's own value for status 99
	profiles     string // metadata.profiles as a JSON array, or ""
	tenant       []byte // the record's own account (a string token), or nil
	eventCode    []byte // metadata.event_code (a string token), or nil
	correlation  ident  // metadata.correlation_uid
	logProvider  []byte // metadata.log_provider (a string token), or nil
}

// event writes the whole event of envelope e.
func (m *Mapper) event(w *enc, s *source, r *rec, e *record.Envelope) {
	var h head
	h.severity = severityInformational
	s.head(r, &h)

	c := &s.class
	w.open("")
	w.int("class_uid", int64(c.uid))
	w.str("class_name", c.name)
	w.int("category_uid", int64(c.category))
	w.str("category_name", c.categoryName)
	w.int("activity_id", int64(h.activity))
	w.key("activity_name")
	actName := c.activity(h.activity)
	if h.activity == activityOther && h.activityName != nil {
		w.b = append(w.b, h.activityName...)
	} else {
		w.b = appendString(w.b, actName)
	}
	w.int("type_uid", int64(c.uid*100+h.activity))
	w.key("type_name")
	w.b = append(w.b, '"')
	w.b = append(w.b, c.name...)
	w.b = append(w.b, ": "...)
	if h.activity == activityOther && h.activityName != nil {
		w.b = append(w.b, h.activityName[1:len(h.activityName)-1]...)
	} else {
		w.b = append(w.b, actName...)
	}
	w.b = append(w.b, '"')
	w.int("severity_id", int64(h.severity))
	w.key("severity")
	if h.severity == severityOther && h.severityName != nil {
		w.b = append(w.b, h.severityName...)
	} else {
		w.b = appendString(w.b, severityCaption(h.severity))
	}
	if h.status != 0 {
		w.int("status_id", int64(h.status))
		w.key("status")
		if h.status == statusOther && h.statusName != nil {
			w.b = append(w.b, h.statusName...)
		} else {
			w.b = appendString(w.b, c.status(h.status))
		}
	}
	w.int("time", e.Time.UnixMilli())
	m.metadata(w, s, r, e, &h)
	s.body(w, r)
	m.unmapped(w, s, r, e)
	if m.rawData {
		w.key("raw_data")
		w.b = appendString(w.b, e.Record)
	}
	w.close()
}

func (m *Mapper) metadata(w *enc, s *source, r *rec, e *record.Envelope, h *head) {
	w.open("metadata")
	w.str("version", Version)
	w.key("product")
	w.b = append(w.b, s.product...)
	w.str("uid", e.ID)
	if v := r.f[s.timeField]; !isNull(v) {
		switch {
		case isString(v):
			w.token("original_time", v)
		case v[0] == '-' || v[0] >= '0' && v[0] <= '9':
			w.key("original_time")
			w.b = append(w.b, '"')
			w.b = append(w.b, v...)
			w.b = append(w.b, '"')
		}
		if _, ok := timeMs(v); ok {
			r.mapped(s.timeField)
		} else {
			// C3: the record time is unreadable, so time is the window
			// start (record.Envelope.Time); keep the member as sent.
			r.fallback(s.timeField)
		}
	}
	w.int("logged_time", e.FetchedAt.UnixMilli())
	w.str("log_name", s.name)
	if h.tenant != nil {
		w.token("tenant_uid", h.tenant)
	} else if e.Account != "" {
		w.str("tenant_uid", e.Account)
	}
	if h.eventCode != nil {
		w.token("event_code", h.eventCode)
	}
	if h.correlation.ok {
		w.id("correlation_uid", h.correlation)
	}
	if h.logProvider != nil {
		w.token("log_provider", h.logProvider)
	}
	if h.profiles != "" {
		w.key("profiles")
		w.b = append(w.b, h.profiles...)
	}
	w.close()
}

// unmapped writes the members that no attribute holds, as sent and in the
// order sent. A record that is not an object is kept whole as "record";
// the bytes as sent of a repaired record (record.Envelope.Original) as
// "record_base64", as in the collector's envelope encoding (C7).
func (m *Mapper) unmapped(w *enc, s *source, r *rec, e *record.Envelope) {
	opened := false
	open := func() {
		if !opened {
			w.open("unmapped")
			opened = true
		}
	}
	for i := range r.order {
		mb := &r.order[i]
		if !r.isUnmapped(mb) {
			continue
		}
		open()
		w.rawMember(mb.name, mb.value)
	}
	if !r.object {
		open()
		r.fallbacks++
		w.raw("record", r.raw)
	}
	if e.Original != nil {
		open()
		name := "record_base64"
		for r.hasMember(name) {
			name = "_" + name
		}
		w.key(name)
		w.b = append(w.b, '"')
		w.b = base64.StdEncoding.AppendEncode(w.b, e.Original)
		w.b = append(w.b, '"')
	}
	if opened {
		w.close()
	}
}

// hasMember reports whether the record has a top-level member called name.
func (r *rec) hasMember(name string) bool {
	for i := range r.order {
		if string(r.text(r.order[i].name)) == name {
			return true
		}
	}
	return false
}
