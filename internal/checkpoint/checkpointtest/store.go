// Package checkpointtest holds an in-memory checkpoint.Store that records
// every commit, for the tests of the packages that consume a Store (the
// pipeline). It is never used outside tests.
package checkpointtest

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"github.com/svcexport/collector/internal/checkpoint"
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
	err     error
	closed  bool
}

var _ checkpoint.Store = (*Store)(nil)

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
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range m {
		if err := s.usable(ctx, k); err != nil {
			return fmt.Errorf("commit %d checkpoints: %w", len(m), err)
		}
	}
	if s.states == nil {
		s.states = make(map[record.Stream]checkpoint.State)
	}
	c := cloneMap(m)
	maps.Copy(s.states, c)
	s.commits = append(s.commits, cloneMap(c))
	return nil
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
func (s *Store) Reset(ctx context.Context, source, account string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(ctx, record.Stream{Source: source, Account: account}); err != nil {
		return 0, fmt.Errorf("reset checkpoints of %s: %w", source, err)
	}
	n := 0
	for k := range s.states {
		if k.Source == source && (account == "" || k.Account == account) {
			delete(s.states, k)
			n++
		}
	}
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
	if st.InFlight != nil {
		f := *st.InFlight
		st.InFlight = &f
	}
	return st
}

func cloneMap(m map[record.Stream]checkpoint.State) map[record.Stream]checkpoint.State {
	out := make(map[record.Stream]checkpoint.State, len(m))
	for k, st := range m {
		out[k] = clone(st)
	}
	return out
}
