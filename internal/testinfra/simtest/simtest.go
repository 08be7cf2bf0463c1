// Package simtest starts the project's API simulator for tests and
// benchmarks, and holds the small helpers those tests share. It is imported
// by test files only.
package simtest

import (
	"bytes"
	"sync"
	"testing"

	"github.com/svcexport/collector/internal/apisim"
)

// Start starts a simulator on a free loopback port with apisim's defaults
// adjusted by mut (may be nil), and closes it when tb ends.
func Start(tb testing.TB, mut func(*apisim.Config)) *apisim.Server {
	tb.Helper()
	cfg := apisim.DefaultConfig()
	if mut != nil {
		mut(&cfg)
	}
	srv, err := apisim.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if err := srv.Start("127.0.0.1:0"); err != nil {
		srv.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() { srv.Close() })
	return srv
}

// SyncBuffer is a bytes.Buffer that one process's output and a test may use
// at the same time. The zero value is ready to use.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
