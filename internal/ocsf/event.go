package ocsf

import (
	"github.com/svcexport/collector/internal/ocsf/ocsfbase"
	"github.com/svcexport/collector/internal/ocsf/ocsfjson"
	"github.com/svcexport/collector/internal/ocsf/ocsfrec"
	"github.com/svcexport/collector/internal/record"
)

// event writes the whole event of envelope e.
func (m *Mapper) event(w *ocsfjson.Writer, s *source, r *ocsfrec.Record, e *record.Envelope) {
	var h ocsfbase.Head
	h.Severity = ocsfbase.SeverityInformational
	s.head(r, &h)
	if e.Snapshot && s.Class.UID == ocsfbase.InventoryInfo().UID {
		// An inventory walk's record: the state was collected, not
		// reported by the agent (Device Inventory Info, activity Collect).
		h.Activity = activityCollect
	}

	c := &s.Class
	w.Open("")
	w.Int("class_uid", int64(c.UID))
	w.Str("class_name", c.Name)
	w.Int("category_uid", int64(c.Category))
	w.Str("category_name", c.CategoryName)
	w.Int("activity_id", int64(h.Activity))
	actName := c.Activity(h.Activity)
	caption(w, "activity_name", h.Activity == ocsfbase.ActivityOther, h.ActivityName, actName)
	w.Int("type_uid", int64(c.UID*100+h.Activity))
	w.Key("type_name")
	w.AppendByte('"')
	w.AppendRawString(c.Name)
	w.AppendRawString(": ")
	if h.Activity == ocsfbase.ActivityOther && h.ActivityName != nil {
		w.AppendRaw(h.ActivityName[1 : len(h.ActivityName)-1])
	} else {
		w.AppendRawString(actName)
	}
	w.AppendByte('"')
	w.Int("severity_id", int64(h.Severity))
	caption(w, "severity", h.Severity == ocsfbase.SeverityOther, h.SeverityName, ocsfbase.SeverityCaption(h.Severity))
	if h.Status != 0 {
		w.Int("status_id", int64(h.Status))
		caption(w, "status", h.Status == ocsfbase.StatusOther, h.StatusName, c.Status(h.Status))
	}
	w.Int("time", e.Time.UnixMilli())
	m.metadata(w, s, r, e, &h)
	s.body(w, r)
	m.unmapped(w, r, e)
	if m.rawData {
		w.Key("raw_data")
		w.AppendStringBytes(e.Record)
	}
	w.Close()
}

// caption writes member name, the caption of an enum value: the source's
// own value (a JSON string token) when the value is Other (99) and the
// source has one, else the enum's caption.
func caption(w *ocsfjson.Writer, name string, other bool, own []byte, enum string) {
	w.Key(name)
	if other && own != nil {
		w.AppendRaw(own)
	} else {
		w.AppendString(enum)
	}
}

func (m *Mapper) metadata(w *ocsfjson.Writer, s *source, r *ocsfrec.Record, e *record.Envelope, h *ocsfbase.Head) {
	w.Open("metadata")
	w.Str("version", Version)
	w.Key("product")
	w.AppendRaw(s.product)
	w.Str("uid", e.ID)
	if v := r.Field(s.TimeField); !ocsfjson.IsNull(v) {
		switch {
		case ocsfjson.IsString(v):
			w.Token("original_time", v)
		case v[0] == '-' || v[0] >= '0' && v[0] <= '9':
			w.Key("original_time")
			w.AppendByte('"')
			w.AppendRaw(v)
			w.AppendByte('"')
		}
		if _, ok := ocsfrec.TimeMs(v); ok {
			r.Mapped(s.TimeField)
		} else {
			// C3: the record time is unreadable, so time is the window
			// start (record.Envelope.Time); keep the member as sent.
			r.Fallback(s.TimeField)
		}
	}
	w.Int("logged_time", e.FetchedAt.UnixMilli())
	w.Str("log_name", s.Name)
	if h.Tenant != nil {
		w.Token("tenant_uid", h.Tenant)
	} else if e.Account != "" {
		w.Str("tenant_uid", e.Account)
	}
	if h.EventCode != nil {
		w.Token("event_code", h.EventCode)
	}
	if h.Correlation.OK {
		ocsfrec.WriteID(w, "correlation_uid", h.Correlation)
	}
	if h.LogProvider != nil {
		w.Token("log_provider", h.LogProvider)
	}
	if h.Profiles != "" {
		w.Key("profiles")
		w.AppendRawString(h.Profiles)
	}
	// record.Envelope.Snapshot: a consumer tells an inventory snapshot
	// from an event by the label "snapshot" in every class. A record of a
	// named tenant (docs/tenants.md) carries "tenant:NAME": tenant_uid is
	// the record's account within it. A tenant name is letters, digits,
	// - and _: nothing to escape.
	switch {
	case e.Snapshot && e.Tenant != "":
		w.Key("labels")
		w.AppendRawString(`["snapshot","tenant:` + e.Tenant + `"]`)
	case e.Snapshot:
		w.Key("labels")
		w.AppendRawString(`["snapshot"]`)
	case e.Tenant != "":
		w.Key("labels")
		w.AppendRawString(`["tenant:` + e.Tenant + `"]`)
	}
	w.Close()
}

// activityCollect is Device Inventory Info's activity Collect: "the
// discovered information is via a collection process".
const activityCollect = 2

// unmapped writes the members that no attribute holds, as sent and in the
// order sent. A record that is not an object is kept whole as "record";
// the bytes as sent of a repaired record (record.Envelope.Original) as
// "record_base64", as in the collector's envelope encoding (C7).
func (m *Mapper) unmapped(w *ocsfjson.Writer, r *ocsfrec.Record, e *record.Envelope) {
	opened := false
	open := func() {
		if !opened {
			w.Open("unmapped")
			opened = true
		}
	}
	for i := range r.Len() {
		name, value, unmapped := r.Member(i)
		if !unmapped {
			continue
		}
		open()
		w.RawMember(name, value)
	}
	if !r.Object() {
		open()
		r.CountFallback()
		w.Raw("record", r.Raw())
	}
	if e.Original != nil {
		open()
		name := "record_base64"
		for r.HasMember(name) {
			name = "_" + name
		}
		w.Key(name)
		w.AppendBase64(e.Original)
	}
	if opened {
		w.Close()
	}
}
