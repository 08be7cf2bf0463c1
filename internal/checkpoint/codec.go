package checkpoint

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/window"
)

// stateVersion is the version of the encoding of a State value. A change of
// meaning bumps it; a reader refuses a version it does not know. Version 2
// added the paging limits the stream learnt and where it began (limits,
// start); version 1 values, which lack them, are read as knowing neither.
// Version 3 added the last inventory snapshot (inventory); version 1 and 2
// values are read as knowing none.
const (
	stateVersion   = 3
	stateVersionV2 = 2
	stateVersionV1 = 1
)

// keySep separates source and account in a stored key. A source never holds
// it (validateKey), so the first one splits the key.
const keySep = "\x00"

// tenantSep ends the tenant that starts a tenant's stored key:
// "TENANT/SOURCE\x00ACCOUNT". The one-tenant form (Tenant "") has no
// prefix, so that a checkpoint written before tenants opens unchanged. A
// source never holds it (validateKey), nor does a tenant name (config):
// all of a tenant's progress is the keys under "TENANT/", one unit to move
// to another collector.
const tenantSep = "/"

// wireState is the stored form of a State: JSON with a version field. It is
// separate from State so that a change of State never silently changes the
// file format.
type wireState struct {
	V         int           `json:"v"`
	Watermark time.Time     `json:"watermark"`
	InFlight  *wireInFlight `json:"in_flight,omitempty"`
	Delivered int64         `json:"delivered"`
	Density   float64       `json:"density"`
	Updated   time.Time     `json:"updated"`
	// Version 2.
	Start  time.Time   `json:"start,omitzero"`
	Limits *wireLimits `json:"limits,omitempty"`
	// Version 3.
	Inventory *wireInventory `json:"inventory,omitempty"`
}

// wireInventory is the stored form of a cursor.Inventory: the digests as
// 8 big-endian bytes each (two's complement), in order (base64 in the JSON: about 11
// characters an agent).
type wireInventory struct {
	Taken  time.Time `json:"taken,omitzero"`
	States []byte    `json:"states,omitempty"`
}

// wireLimits is the stored form of a State's window.Limits (durations in
// nanoseconds); the zero Limits is not stored.
type wireLimits struct {
	PageRows    int           `json:"page_rows,omitempty"`
	CountCap    int64         `json:"count_cap,omitempty"`
	NextPageTTL time.Duration `json:"next_page_ttl_ns,omitempty"`
	ChainAgeOK  time.Duration `json:"chain_age_ok_ns,omitempty"`
	PageTime    time.Duration `json:"page_time_ns,omitempty"`
	ChainCap    int64         `json:"chain_cap,omitempty"`
}

// wireInFlight is the stored form of a State's cursor.Chain.
type wireInFlight struct {
	Start        time.Time `json:"start"`
	End          time.Time `json:"end"`
	NextURL      string    `json:"next_url,omitempty"`
	ChainStarted time.Time `json:"chain_started"`
	Pages        int       `json:"pages"`
	Rows         int64     `json:"rows"`
	Total        int64     `json:"total,omitempty"`
}

func validateKey(k record.Stream) error {
	if k.Source == "" {
		return fmt.Errorf("key %q: empty source: %w", k.String(), ErrInvalidKey)
	}
	if strings.Contains(k.Source, keySep) {
		return fmt.Errorf("key %q: source holds a NUL byte: %w", k.String(), ErrInvalidKey)
	}
	if strings.Contains(k.Source, tenantSep) || strings.Contains(k.Tenant, tenantSep) || strings.Contains(k.Tenant, keySep) {
		return fmt.Errorf("key %q: source or tenant holds %q or a NUL byte: %w", k.String(), tenantSep, ErrInvalidKey)
	}
	return nil
}

func encodeKey(k record.Stream) []byte {
	n := len(k.Source) + len(keySep) + len(k.Account)
	if k.Tenant != "" {
		n += len(k.Tenant) + len(tenantSep)
	}
	b := make([]byte, 0, n)
	if k.Tenant != "" {
		b = append(b, k.Tenant...)
		b = append(b, tenantSep...)
	}
	b = append(b, k.Source...)
	b = append(b, keySep...)
	return append(b, k.Account...)
}

// sourcePrefix is the prefix of every stored key of tenant's source
// (tenant "": the one-tenant form's, which no tenant's key starts with).
func sourcePrefix(tenant, source string) []byte {
	return encodeKey(record.Stream{Tenant: tenant, Source: source})
}

func decodeKey(b []byte) (record.Stream, error) {
	source, account, ok := bytes.Cut(b, []byte(keySep))
	if !ok || len(source) == 0 {
		return record.Stream{}, fmt.Errorf("stored key %q: %w", b, ErrCorrupt)
	}
	tenant, src, ok := bytes.Cut(source, []byte(tenantSep))
	if !ok {
		return record.Stream{Source: string(source), Account: string(account)}, nil
	}
	if len(tenant) == 0 || len(src) == 0 {
		return record.Stream{}, fmt.Errorf("stored key %q: %w", b, ErrCorrupt)
	}
	return record.Stream{Tenant: string(tenant), Source: string(src), Account: string(account)}, nil
}

// utc drops the location and the monotonic reading; the zero time stays zero.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

func encodeState(s State) ([]byte, error) {
	w := wireState{
		V:         stateVersion,
		Watermark: utc(s.Watermark),
		Delivered: s.Delivered,
		Density:   s.Density,
		Updated:   utc(s.Updated),
		Start:     utc(s.Start),
	}
	if l := s.Limits; l != (window.Limits{}) {
		w.Limits = &wireLimits{PageRows: l.PageRows, CountCap: l.CountCap, NextPageTTL: l.NextPageTTL,
			ChainAgeOK: l.ChainAgeOK, PageTime: l.PageTime, ChainCap: l.ChainCap}
	}
	if inv := s.Inventory; !inv.IsZero() {
		w.Inventory = &wireInventory{Taken: utc(inv.Taken), States: make([]byte, 0, 8*len(inv.States))}
		for _, d := range inv.States {
			w.Inventory.States = binary.BigEndian.AppendUint64(w.Inventory.States, uint64(d))
		}
	}
	// Density is only a sizing hint: a value JSON cannot hold must not stop
	// a stream from committing, so it is stored as unknown.
	if math.IsNaN(w.Density) || math.IsInf(w.Density, 0) || w.Density < 0 {
		w.Density = 0
	}
	if f := s.InFlight; f != nil {
		w.InFlight = &wireInFlight{
			Start:        utc(f.Window.Start),
			End:          utc(f.Window.End),
			NextURL:      f.NextURL,
			ChainStarted: utc(f.Started),
			Pages:        f.Pages,
			Rows:         f.Rows,
			Total:        f.Total,
		}
	}
	b, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("encode state: %w", err)
	}
	return b, nil
}

// decodeState decodes a stored value. It never returns a zero State for a
// value it cannot read: it returns an error wrapping ErrCorrupt or
// ErrUnknownVersion.
func decodeState(b []byte) (State, error) {
	var head struct {
		V *int `json:"v"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return State{}, fmt.Errorf("undecodable value (%d bytes): %w: %w", len(b), ErrCorrupt, err)
	}
	if head.V == nil {
		return State{}, fmt.Errorf("value has no version field: %w", ErrCorrupt)
	}
	if *head.V != stateVersion && *head.V != stateVersionV2 && *head.V != stateVersionV1 {
		return State{}, fmt.Errorf("value has version %d, this collector reads versions %d to %d: %w", *head.V, stateVersionV1, stateVersion, ErrUnknownVersion)
	}
	var w wireState
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return State{}, fmt.Errorf("undecodable version %d value: %w: %w", *head.V, ErrCorrupt, err)
	}
	if dec.More() {
		return State{}, fmt.Errorf("trailing data after the value: %w", ErrCorrupt)
	}
	if *head.V == stateVersionV1 && (w.Limits != nil || !w.Start.IsZero()) {
		return State{}, fmt.Errorf("version 1 value with fields of version 2: %w", ErrCorrupt)
	}
	if *head.V < stateVersion && w.Inventory != nil {
		return State{}, fmt.Errorf("version %d value with fields of version 3: %w", *head.V, ErrCorrupt)
	}
	s := State{
		Cursor:    cursor.Cursor{Watermark: utc(w.Watermark), Density: w.Density, Start: utc(w.Start)},
		Delivered: w.Delivered,
		Updated:   utc(w.Updated),
	}
	if l := w.Limits; l != nil {
		s.Limits = window.Limits{PageRows: l.PageRows, CountCap: l.CountCap, NextPageTTL: l.NextPageTTL,
			ChainAgeOK: l.ChainAgeOK, PageTime: l.PageTime, ChainCap: l.ChainCap}
	}
	if inv := w.Inventory; inv != nil {
		if len(inv.States)%8 != 0 {
			return State{}, fmt.Errorf("inventory states of %d bytes, not a multiple of 8: %w", len(inv.States), ErrCorrupt)
		}
		s.Inventory.Taken = utc(inv.Taken)
		for b := inv.States; len(b) > 0; b = b[8:] {
			d := int64(binary.BigEndian.Uint64(b))
			if n := len(s.Inventory.States); n > 0 && s.Inventory.States[n-1] >= d {
				return State{}, fmt.Errorf("inventory states out of order: %w", ErrCorrupt)
			}
			s.Inventory.States = append(s.Inventory.States, d)
		}
	}
	if f := w.InFlight; f != nil {
		s.InFlight = &cursor.Chain{
			Window:  window.Window{Start: utc(f.Start), End: utc(f.End)},
			NextURL: f.NextURL,
			Started: utc(f.ChainStarted),
			Pages:   f.Pages,
			Rows:    f.Rows,
			Total:   f.Total,
		}
	}
	return s, nil
}
