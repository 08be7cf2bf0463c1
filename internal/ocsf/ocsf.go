package ocsf

import (
	"errors"
	"fmt"
	"sync"

	"github.com/svcexport/collector/internal/ocsf/coremap"
	"github.com/svcexport/collector/internal/ocsf/edgemap"
	"github.com/svcexport/collector/internal/ocsf/ocsfbase"
	"github.com/svcexport/collector/internal/ocsf/ocsfjson"
	"github.com/svcexport/collector/internal/ocsf/ocsfrec"
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
	recs    sync.Pool // *ocsfrec.Record
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
	for _, d := range sources() {
		s := &source{Source: d}
		name := o.ProductName
		if s.Edge {
			name = o.EdgeProductName
		}
		var p ocsfjson.Writer
		p.Open("")
		p.Str("name", name)
		p.Str("vendor_name", o.VendorName)
		if o.ProductVersion != "" {
			p.Str("version", o.ProductVersion)
		}
		p.Close()
		s.product = p.Bytes()
		s.index = make(map[string]int, len(s.Fields))
		for i, f := range s.Fields {
			s.index[f] = i
		}
		m.sources[s.Name] = s
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
	r, _ := m.recs.Get().(*ocsfrec.Record)
	if r == nil {
		r = new(ocsfrec.Record)
	}
	defer m.recs.Put(r)
	if err := r.Scan(s.index, e.Record); err != nil {
		return dst, 0, fmt.Errorf("ocsf: %s record %s: %w", e.Source, e.ID, err)
	}
	w := ocsfjson.NewWriter(dst)
	m.event(&w, s, r, e)
	return w.Bytes(), r.Fallbacks(), nil
}

// ClassOf returns the OCSF class uid and name that Append uses for events
// of source, or 0 and "" for a source it does not know.
func ClassOf(source string) (uid int, name string) {
	for _, s := range sources() {
		if s.Name == source {
			return s.Class.UID, s.Class.Name
		}
	}
	return 0, ""
}

// Sources returns the names of the sources Append maps, in CONTRACT order
// (C3, then C6).
func Sources() []string {
	var out []string
	for _, s := range sources() {
		out = append(out, s.Name)
	}
	return out
}

// source is the mapping of one source with what New adds to it.
type source struct {
	ocsfbase.Source
	product []byte         // metadata.product as JSON
	index   map[string]int // field name -> index into Fields
}

// sources returns the mappings of the nine sources in CONTRACT order: the
// core API's (package coremap), then the edge API's (package edgemap).
func sources() []ocsfbase.Source {
	return append(coremap.Sources(), edgemap.Sources()...)
}

// head runs the source's first step, in the package that maps it.
func (s *source) head(r *ocsfrec.Record, h *ocsfbase.Head) {
	if s.Edge {
		edgemap.Head(s.ID, r, h)
	} else {
		coremap.Head(s.ID, r, h)
	}
}

// body runs the source's second step, in the package that maps it.
func (s *source) body(w *ocsfjson.Writer, r *ocsfrec.Record) {
	if s.Edge {
		edgemap.Body(s.ID, w, r)
	} else {
		coremap.Body(s.ID, w, r)
	}
}
