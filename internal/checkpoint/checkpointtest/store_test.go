package checkpointtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

func TestTheFakeRecordsCommitsAndCopiesStates(t *testing.T) {
	ctx := context.Background()
	var s Store
	k := record.Stream{Source: "dns", Account: "acme"}
	f := &cursor.Chain{Pages: 1}
	if err := s.Commit(ctx, k, checkpoint.State{Cursor: cursor.Cursor{Watermark: time.Unix(60, 0), InFlight: f}}); err != nil {
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
	if n, err := s.Reset(ctx, "", "dns", ""); n != 2 || err != nil {
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

// The fake keeps window logs and alert marks as the bbolt store does, so
// that a test of the pipeline on the fake says what the real store would
// hold.
func TestTheFakeAppliesWindowLogsAndAlertMarksAsTheDBDoes(t *testing.T) {
	ctx := context.Background()
	db, err := checkpoint.Open(filepath.Join(t.TempDir(), "cp.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var fake Store
	rng := rand.New(rand.NewPCG(3, 4))
	t0 := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	hour := func(i int) cursor.LoggedWindow {
		return cursor.LoggedWindow{Start: t0.Add(time.Duration(i) * time.Hour), End: t0.Add(time.Duration(i+1) * time.Hour),
			Count: rng.Int64N(100), FetchedAt: t0.Add(48 * time.Hour), Passed: time.Duration(rng.IntN(3)) * time.Hour}
	}
	streams := []record.Stream{{Source: "dns", Account: "a"}, {Source: "edge_alerts", Account: "b"}}
	for range 200 {
		c := checkpoint.Changes{Windows: map[record.Stream]cursor.WindowChanges{}, Alerts: map[record.Stream]cursor.AlertChanges{}}
		k := streams[rng.IntN(len(streams))]
		var w cursor.WindowChanges
		for range rng.IntN(3) {
			w.Delete = append(w.Delete, hour(rng.IntN(30)).Start)
		}
		for range rng.IntN(4) {
			w.Put = append(w.Put, hour(rng.IntN(30)))
		}
		if rng.IntN(8) == 0 {
			w.PruneBefore = t0.Add(time.Duration(rng.IntN(30)) * time.Hour)
		}
		c.Windows[k] = w
		a := cursor.AlertChanges{Put: map[string]cursor.AlertMark{}}
		for range rng.IntN(4) {
			a.Put[fmt.Sprintf("u%d", rng.IntN(40))] = cursor.AlertMark{Update: t0.Add(time.Duration(rng.IntN(1e6)) * time.Millisecond), Create: t0.Add(time.Duration(rng.IntN(40)) * time.Minute)}
		}
		if rng.IntN(8) == 0 {
			a.PruneCreatedBefore = t0.Add(time.Duration(rng.IntN(40)) * time.Minute)
		}
		c.Alerts[k] = a
		if err := db.Apply(ctx, c); err != nil {
			t.Fatal(err)
		}
		if err := fake.Apply(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range streams {
		dw, _ := db.Windows(ctx, k)
		fw, _ := fake.Windows(ctx, k)
		if len(dw) != len(fw) {
			t.Fatalf("%s: db has %d windows, fake %d", k, len(dw), len(fw))
		}
		for i := range dw {
			if !dw[i].Start.Equal(fw[i].Start) || dw[i].Count != fw[i].Count || dw[i].Passed != fw[i].Passed {
				t.Fatalf("%s: window %d: db %+v, fake %+v", k, i, dw[i], fw[i])
			}
		}
		da, _ := db.Alerts(ctx, k)
		fa, _ := fake.Alerts(ctx, k)
		if len(da) != len(fa) {
			t.Fatalf("%s: db has %d alerts, fake %d", k, len(da), len(fa))
		}
		for u, m := range da {
			if f, ok := fa[u]; !ok || !f.Update.Equal(m.Update) || !f.Create.Equal(m.Create) {
				t.Fatalf("%s: alert %s: db %+v, fake %+v", k, u, m, f)
			}
		}
	}
}
