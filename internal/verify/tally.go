package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/svcexport/collector/internal/record"
)

// alertsSource is the edge alerts source (C6): its records change after
// creation, and every version has its own C7 id, so an alert is counted
// once by its uuid.
const alertsSource = "edge_alerts"

// tally counts distinct records per target. Memory: one 32-byte identity
// and the map's overhead (about 60 bytes) per distinct record of the
// targets. Not safe for concurrent use.
type tally struct {
	targets map[Key]Target
	streams map[record.Stream]bool
	sets    map[Key]map[[32]byte]struct{}
	last    record.Stream // of stream, so that a file's lines share it
	// lastResolved is resolve(last).
	lastResolved record.Stream
	// edge maps a tenant's edge source to its target stream: the edge
	// API has no account selection (C6), so one edge stream (tenant,
	// source, edge.account) holds the records of every envelope account.
	edge map[[2]string]record.Stream
}

func newTally(targets []Target) *tally {
	t := &tally{targets: make(map[Key]Target, len(targets)), streams: map[record.Stream]bool{}, sets: map[Key]map[[32]byte]struct{}{},
		edge: map[[2]string]record.Stream{}}
	for _, x := range targets {
		t.targets[x.Key()] = x
		t.streams[x.Stream] = true
		if x.Edge {
			t.edge[[2]string{x.Stream.Tenant, x.Stream.Source}] = x.Stream
		}
	}
	return t
}

// resolve returns the target stream of a record of envelope stream k: k,
// or for an edge source the edge stream.
func (t *tally) resolve(k record.Stream) record.Stream {
	if e, ok := t.edge[[2]string{k.Tenant, k.Source}]; ok {
		return e
	}
	return k
}

// stream returns the target stream (resolve) of tenant ("" in the
// one-tenant form), source and account, without allocating when it is the
// one of the previous call.
func (t *tally) stream(tenant, source, account []byte) record.Stream {
	if string(source) != t.last.Source || string(account) != t.last.Account || string(tenant) != t.last.Tenant {
		t.last = record.Stream{Tenant: string(tenant), Source: string(source), Account: string(account)}
		t.lastResolved = t.resolve(t.last)
	}
	return t.lastResolved
}

// wants reports whether the tally has a target of stream k at all.
func (t *tally) wants(k record.Stream) bool { return t.streams[k] }

// add counts a record of stream k with time tm and identity id, if a
// target holds it.
func (t *tally) add(k record.Stream, tm time.Time, id [32]byte) {
	key := Key{Stream: k, Day: tm.UTC().Truncate(Day)}
	x, ok := t.targets[key]
	if !ok || tm.Before(x.Start) || !tm.Before(x.End) {
		return
	}
	s := t.sets[key]
	if s == nil {
		s = map[[32]byte]struct{}{}
		t.sets[key] = s
	}
	s[id] = struct{}{}
}

func (t *tally) counts() map[Key]int64 {
	out := make(map[Key]int64, len(t.sets))
	for k, s := range t.sets {
		out[k] = int64(len(s))
	}
	return out
}

// identity is what makes a record of source distinct: its C7 id (64 hex
// digits, as 32 bytes), or for an edge alert the uuid of its record
// (hashed) when it has one. raw is the record, read only for edge alerts.
func identity(source string, id, raw []byte) [32]byte {
	if source == alertsSource && len(raw) > 0 {
		var a struct {
			UUID string `json:"uuid"`
		}
		if json.Unmarshal(raw, &a) == nil && a.UUID != "" {
			return sha256.Sum256([]byte("uuid\x00" + a.UUID))
		}
	}
	var b [32]byte
	if len(id) == 2*len(b) {
		if _, err := hex.Decode(b[:], id); err == nil {
			return b
		}
	}
	return sha256.Sum256(append([]byte("id\x00"), id...))
}
