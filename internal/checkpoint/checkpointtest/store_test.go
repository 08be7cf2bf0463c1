package checkpointtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/record"
)

func TestTheFakeRecordsCommitsAndCopiesStates(t *testing.T) {
	ctx := context.Background()
	var s Store
	k := record.Stream{Source: "dns", Account: "acme"}
	f := &checkpoint.InFlight{Pages: 1}
	if err := s.Commit(ctx, k, checkpoint.State{Watermark: time.Unix(60, 0), InFlight: f}); err != nil {
		t.Fatal(err)
	}
	f.Pages = 99 // the caller's pointer must not reach into the store
	got, ok, err := s.Load(ctx, k)
	if err != nil || !ok || got.InFlight.Pages != 1 {
		t.Fatalf("Load = %+v, %v, %v", got, ok, err)
	}
	if err := s.CommitMany(ctx, map[record.Stream]checkpoint.State{k: {}, {Source: "dns", Account: "b"}: {}}); err != nil {
		t.Fatal(err)
	}
	if c := s.Commits(); len(c) != 2 || len(c[1]) != 2 {
		t.Fatalf("Commits = %v", c)
	}
	if n, err := s.Reset(ctx, "dns", ""); n != 2 || err != nil {
		t.Fatalf("Reset = %d, %v", n, err)
	}
	boom := errors.New("disk full")
	s.FailWith(boom)
	if err := s.Commit(ctx, k, checkpoint.State{}); !errors.Is(err, boom) {
		t.Fatalf("Commit = %v, want %v", err, boom)
	}
	s.FailWith(nil)
	s.Close()
	if _, err := s.All(ctx); !errors.Is(err, checkpoint.ErrClosed) {
		t.Fatalf("All after Close = %v", err)
	}
}
