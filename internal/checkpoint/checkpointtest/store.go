// Package checkpointtest holds an in-memory checkpoint.Store that records
// every commit, for the tests of the packages that consume a Store (the
// pipeline). It is never used outside tests.
package checkpointtest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// Store is an in-memory checkpoint.Store. It keeps every commit in order so
// that a test can assert that checkpoints followed the acknowledgements.
//
// The zero Store is empty and ready to use; it is safe for concurrent use.
type Store struct {
	mu      sync.Mutex
	states  map[record.Stream]checkpoint.State
	commits []map[record.Stream]checkpoint.State
	windows map[record.Stream][]cursor.LoggedWindow
	alerts  map[record.Stream]map[string]cursor.AlertMark
	// delivered keeps every delivered-set key, never cut (a test's run is
	// short).
	delivered map[record.Stream][]cursor.Delivered
	marks     map[string][]byte
	// held keeps every sink's held set, never cut.
	held    map[string]map[record.Stream][]cursor.Delivered
	applied []checkpoint.Changes
	err     error
	closed  bool
}

// Store has the methods of *checkpoint.DB that pipeline.Store and the
// commands use; the pipeline's tests hold it to pipeline.Store.

// FailWith makes every later call return an error wrapping err, until
// FailWith(nil).
func (s *Store) FailWith(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

// Commits returns a copy of every successful Commit and CommitMany, in
// order, one map per call.
func (s *Store) Commits() []map[record.Stream]checkpoint.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]map[record.Stream]checkpoint.State, len(s.commits))
	for i, m := range s.commits {
		out[i] = cloneMap(m)
	}
	return out
}

// Applied returns every successful Apply, Commit and CommitMany, in order,
// one Changes per call (maps shared with the caller's: do not change
// them).
func (s *Store) Applied() []checkpoint.Changes {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.applied)
}

// Load implements checkpoint.Store.
func (s *Store) Load(ctx context.Context, k record.Stream) (checkpoint.State, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(ctx, k); err != nil {
		return checkpoint.State{}, false, fmt.Errorf("load checkpoint %s: %w", k, err)
	}
	st, ok := s.states[k]
	return clone(st), ok, nil
}

// Commit implements checkpoint.Store.
func (s *Store) Commit(ctx context.Context, k record.Stream, st checkpoint.State) error {
	return s.CommitMany(ctx, map[record.Stream]checkpoint.State{k: st})
}

// CommitMany implements checkpoint.Store.
func (s *Store) CommitMany(ctx context.Context, m map[record.Stream]checkpoint.State) error {
	if len(m) == 0 {
		return nil
	}
	return s.Apply(ctx, checkpoint.Changes{States: m})
}

// Apply implements checkpoint.Store with the DB's semantics, without its
// bounds on entries.
func (s *Store) Apply(ctx context.Context, c checkpoint.Changes) error {
	if c.Empty() {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ks := range [][]record.Stream{slices.Collect(maps.Keys(c.States)), slices.Collect(maps.Keys(c.Windows)), slices.Collect(maps.Keys(c.Alerts)), slices.Collect(maps.Keys(c.Delivered))} {
		for _, k := range ks {
			if err := s.usable(ctx, k); err != nil {
				return fmt.Errorf("commit checkpoints: %w", err)
			}
		}
	}
	for k, a := range c.Alerts {
		for uuid := range a.Put {
			if uuid == "" {
				return fmt.Errorf("alert marks of %s: alert mark without uuid", k)
			}
		}
	}
	if len(c.States) > 0 {
		if s.states == nil {
			s.states = make(map[record.Stream]checkpoint.State)
		}
		st := cloneMap(c.States)
		maps.Copy(s.states, st)
		s.commits = append(s.commits, cloneMap(st))
	}
	for k, w := range c.Windows {
		if s.windows == nil {
			s.windows = map[record.Stream][]cursor.LoggedWindow{}
		}
		s.windows[k] = applyWindows(s.windows[k], w)
	}
	for k, a := range c.Alerts {
		if s.alerts == nil {
			s.alerts = map[record.Stream]map[string]cursor.AlertMark{}
		}
		m := s.alerts[k]
		if m == nil {
			m = map[string]cursor.AlertMark{}
		}
		maps.Copy(m, a.Put)
		if !a.PruneCreatedBefore.IsZero() {
			maps.DeleteFunc(m, func(_ string, am cursor.AlertMark) bool {
				return am.Create.Truncate(time.Millisecond).Before(a.PruneCreatedBefore.Truncate(time.Millisecond))
			})
		}
		s.alerts[k] = m
	}
	for name, m := range c.Marks {
		if s.marks == nil {
			s.marks = map[string][]byte{}
		}
		s.marks[name] = m
	}
	for k, d := range c.Delivered {
		if s.delivered == nil {
			s.delivered = map[record.Stream][]cursor.Delivered{}
		}
		s.delivered[k] = append(s.delivered[k], d...)
	}
	for name, ks := range c.Held {
		if s.held == nil {
			s.held = map[string]map[record.Stream][]cursor.Delivered{}
		}
		if s.held[name] == nil {
			s.held[name] = map[record.Stream][]cursor.Delivered{}
		}
		for k, d := range ks {
			s.held[name][k] = append(s.held[name][k], d...)
		}
	}
	s.applied = append(s.applied, c)
	return nil
}

// Marks implements the sinks' marks read of checkpoint.DB.
func (s *Store) Marks(ctx context.Context) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, fmt.Errorf("load the sinks' marks: %w", s.err)
	}
	return maps.Clone(s.marks), nil
}

// Held implements the sinks' held-set read of checkpoint.DB.
func (s *Store) Held(ctx context.Context) (map[string]map[record.Stream][]cursor.Delivered, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, fmt.Errorf("load the sinks' held sets: %w", s.err)
	}
	out := make(map[string]map[record.Stream][]cursor.Delivered, len(s.held))
	for name, ks := range s.held {
		out[name] = make(map[record.Stream][]cursor.Delivered, len(ks))
		for k, d := range ks {
			out[name][k] = slices.Clone(d)
		}
	}
	return out, nil
}

// DeliveredEnd implements the delivered-set read of checkpoint.DB.
func (s *Store) DeliveredEnd(ctx context.Context, k record.Stream) (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(ctx, k); err != nil {
		return time.Time{}, fmt.Errorf("load delivered set: %w", err)
	}
	var end time.Time
	for _, d := range s.delivered[k] {
		if t := time.UnixMilli(d.Time + 1); t.After(end) {
			end = t
		}
	}
	return end, nil
}

// DeliveredCounts implements the delivered-set counts of checkpoint.DB.
func (s *Store) DeliveredCounts(ctx context.Context, k record.Stream, from, to time.Time) ([]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(ctx, k); err != nil {
		return nil, fmt.Errorf("load delivered set: %w", err)
	}
	lo, hi := from.UnixMilli(), to.UnixMilli()
	if hi <= lo {
		return nil, nil
	}
	const minute = int64(time.Minute / time.Millisecond)
	first := lo - (lo%minute+minute)%minute
	counts := make([]int64, (hi-first+minute-1)/minute)
	for _, d := range s.delivered[k] {
		if d.Time >= lo && d.Time < hi {
			counts[(d.Time-first)/minute]++
		}
	}
	return counts, nil
}

// DeliveredOf implements the delivered-set look-up of checkpoint.DB.
func (s *Store) DeliveredOf(ctx context.Context, k record.Stream, keys []cursor.Delivered) ([]int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(ctx, k); err != nil {
		return nil, fmt.Errorf("load delivered set: %w", err)
	}
	n := map[cursor.Delivered]int{}
	for _, d := range s.delivered[k] {
		n[d]++
	}
	counts := make([]int, len(keys))
	for i, key := range keys {
		counts[i] = n[key]
	}
	return counts, nil
}

func applyWindows(log []cursor.LoggedWindow, c cursor.WindowChanges) []cursor.LoggedWindow {
	log = slices.Clone(log)
	for _, d := range c.Delete {
		log = slices.DeleteFunc(log, func(w cursor.LoggedWindow) bool { return w.Start.Equal(d) })
	}
	for _, p := range c.Put {
		log = slices.DeleteFunc(log, func(w cursor.LoggedWindow) bool { return w.Start.Equal(p.Start) })
		log = append(log, p)
	}
	if !c.PruneBefore.IsZero() {
		log = slices.DeleteFunc(log, func(w cursor.LoggedWindow) bool { return !w.End.After(c.PruneBefore) })
	}
	slices.SortFunc(log, func(a, b cursor.LoggedWindow) int { return a.Start.Compare(b.Start) })
	return log
}

// Windows implements checkpoint.Store.
func (s *Store) Windows(ctx context.Context, k record.Stream) ([]cursor.LoggedWindow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(ctx, k); err != nil {
		return nil, fmt.Errorf("load window log of %s: %w", k, err)
	}
	return slices.Clone(s.windows[k]), nil
}

// Alerts implements checkpoint.Store.
func (s *Store) Alerts(ctx context.Context, k record.Stream) (map[string]cursor.AlertMark, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(ctx, k); err != nil {
		return nil, fmt.Errorf("load alert marks of %s: %w", k, err)
	}
	out := maps.Clone(s.alerts[k])
	if out == nil {
		out = map[string]cursor.AlertMark{}
	}
	return out, nil
}

// All implements checkpoint.Store.
func (s *Store) All(ctx context.Context) (map[record.Stream]checkpoint.State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(ctx, record.Stream{Source: "all"}); err != nil {
		return nil, fmt.Errorf("load all checkpoints: %w", err)
	}
	return cloneMap(s.states), nil
}

// Reset implements checkpoint.Store.
func (s *Store) Reset(ctx context.Context, tenant, source, account string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(ctx, record.Stream{Tenant: tenant, Source: source, Account: account}); err != nil {
		return 0, fmt.Errorf("reset checkpoints of %s: %w", source, err)
	}
	match := func(k record.Stream) bool {
		return k.Tenant == tenant && k.Source == source && (account == "" || k.Account == account)
	}
	n := 0
	for k := range s.states {
		if match(k) {
			delete(s.states, k)
			n++
		}
	}
	maps.DeleteFunc(s.windows, func(k record.Stream, _ []cursor.LoggedWindow) bool { return match(k) })
	maps.DeleteFunc(s.alerts, func(k record.Stream, _ map[string]cursor.AlertMark) bool { return match(k) })
	return n, nil
}

// Close implements checkpoint.Store; later calls fail with
// checkpoint.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

func (s *Store) usable(ctx context.Context, k record.Stream) error {
	switch {
	case s.closed:
		return checkpoint.ErrClosed
	case s.err != nil:
		return s.err
	case k.Source == "":
		return fmt.Errorf("key %q: empty source: %w", k, checkpoint.ErrInvalidKey)
	}
	return ctx.Err()
}

func clone(st checkpoint.State) checkpoint.State {
	st.Cursor = st.Cursor.Clone()
	return st
}

func cloneMap(m map[record.Stream]checkpoint.State) map[record.Stream]checkpoint.State {
	out := make(map[record.Stream]checkpoint.State, len(m))
	for k, st := range m {
		out[k] = clone(st)
	}
	return out
}
