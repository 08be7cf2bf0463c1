package source

import (
	"reflect"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source/catalog"
)

// stream is the stream pc configures.
func (pc PollerConfig) stream() record.Stream {
	return record.Stream{Tenant: pc.Tenant, Source: pc.Spec.Name, Account: pc.Account}
}

// Changes are what a new configuration changes of a Set's streams
// (Update): the streams it adds, those it no longer has, and those whose
// settings differ (Resolve: anything the configuration says of the
// stream), each in the order of Streams.
type Changes struct {
	Added, Removed, Changed []*Poller // Removed: the Set's old pollers
}

// Empty reports whether c changes no stream.
func (c Changes) Empty() bool { return len(c.Added)+len(c.Removed)+len(c.Changed) == 0 }

// Update builds the set of cfg from s, as a configuration reload does
// (issue 33): the pollers of streams whose settings did not change are
// s's own, untouched and running; new pollers are built for the streams
// cfg adds or changes. The clients are s's when their sections (api, and
// edge with api for the edge client) did not change, so that their
// tokens go on; new ones spend the same budget (C4: one budget per
// process). Update validates cfg as Build does; on error s is unchanged.
// The new pollers share the running limiter of their functionality
// (recheck.Limiter), which counts from then on the streams of the set
// returned: the added ones with those running, the removed ones no
// more, so that every stream's cadence (interval: auto) and recheck
// sweeps share the bucket with the streams that spend it (C4). The set
// returned takes s's place: s must not be updated again. The rates themselves (api.rate, edge.rate) are the
// budget's buckets, made at their first use: a change needs a restart,
// which the caller says.
func (s *Set) Update(cfg catalog.Config, o Options, once bool) (*Set, Changes, error) {
	if err := cfg.Validate(); err != nil {
		return nil, Changes{}, err
	}
	old := make(map[record.Stream]PollerConfig)
	for _, pc := range Resolve(s.cfg) {
		old[pc.stream()] = pc
	}
	running := make(map[record.Stream]*Poller, len(s.Pollers))
	for _, p := range s.Pollers {
		running[p.Stream()] = p
	}
	pcs := Resolve(cfg)
	kept := make(map[record.Stream]*Poller, len(pcs))
	for _, pc := range pcs {
		k := pc.stream()
		if was, ok := old[k]; ok && reflect.DeepEqual(was, pc) {
			kept[k] = running[k]
		}
	}
	next := &Set{cfg: cfg, budget: s.budget, limiters: s.limiters}
	if reflect.DeepEqual(cfg.API, s.cfg.API) {
		next.Core = s.Core
		if reflect.DeepEqual(cfg.Edge, s.cfg.Edge) {
			next.Edge = s.Edge
		}
	}
	if err := next.build(cfg, o, once, pcs, kept); err != nil {
		return nil, Changes{}, err
	}
	var ch Changes
	for _, p := range next.Pollers {
		k := p.Stream()
		switch {
		case kept[k] != nil:
		case running[k] != nil:
			ch.Changed = append(ch.Changed, p)
		default:
			ch.Added = append(ch.Added, p)
		}
	}
	for _, p := range s.Pollers {
		if _, ok := next.poller(p.Stream()); !ok {
			ch.Removed = append(ch.Removed, p)
		}
	}
	return next, ch, nil
}

// poller returns the set's poller of stream k.
func (s *Set) poller(k record.Stream) (*Poller, bool) {
	for _, p := range s.Pollers {
		if p.Stream() == k {
			return p, true
		}
	}
	return nil, false
}

// Config returns the configuration the set was built of.
func (s *Set) Config() catalog.Config { return s.cfg }
