package sinkhelper

import (
	"slices"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/sink"

	"github.com/svcexport/collector/internal/record"
)

// A record read back is uncovered when its batch names the mark's run and
// a Seq at or past its stream's coverage; other runs, covered batches and
// malformed names are not.
func TestCoverageTellsTheBatchesACommitDoesNotCover(t *testing.T) {
	t.Parallel()
	c := NewCoverage()
	k := record.Stream{Source: "dns", Account: "acme"}
	name := func(seq uint64) string { return c.BatchName(&record.Batch{Source: "dns", Account: "acme", Seq: seq}) }
	n3, n4 := name(3), name(4)
	m := c.Advance(map[record.Stream]uint64{k: 4})
	unc := m.Uncovered()
	if _, ok := unc("dns", n3); ok {
		t.Errorf("batch 3 uncovered by a commit that covers below 4")
	}
	if got, ok := unc("dns", n4); !ok || got != k {
		t.Errorf("batch 4: %v %v, want uncovered of %s", got, ok, k)
	}
	other := NewCoverage().BatchName(&record.Batch{Account: "acme", Seq: 9})
	for _, b := range []string{other, "", "x/y", m.Run + "/nan/acme"} {
		if _, ok := unc("dns", b); ok {
			t.Errorf("%q taken as uncovered", b)
		}
	}
	c.Reset()
	if c.Advance(nil).Run == m.Run {
		t.Error("Reset kept the run")
	}
}

// Uncovered keeps what a sink noted of each batch until a commit covers
// it (a Seq below the stream's next), per stream: a commit that names
// one stream leaves the others' batches alone.
func TestUncoveredForgetsTheBatchesACommitCovers(t *testing.T) {
	t.Parallel()
	a, b := record.Stream{Source: "dns", Account: "a"}, record.Stream{Source: "dns", Account: "b"}
	var u Uncovered[string]
	u.Handed(a, 0, "a0")
	u.Handed(a, 1, "a1")
	u.Handed(a, 2, "a2")
	u.Handed(b, 0, "b0")
	u.Cover(map[record.Stream]uint64{a: 2})
	if got := slices.Sorted(u.All()); !slices.Equal(got, []string{"a2", "b0"}) {
		t.Fatalf("uncovered after a commit below a's 2: %v, want [a2 b0]", got)
	}
	u.Cover(map[record.Stream]uint64{a: 3, b: 1})
	if got := slices.Collect(u.All()); len(got) != 0 {
		t.Fatalf("uncovered after every batch was covered: %v", got)
	}
	u.Handed(b, 5, "b5")
	u.Reset()
	if got := slices.Collect(u.All()); len(got) != 0 {
		t.Fatalf("uncovered after Reset: %v", got)
	}
}

// Add keys a record read back as the checkpoint's delivered sets do, one
// entry a copy.
func TestAddKeysARecordAsTheDeliveredSetsDo(t *testing.T) {
	t.Parallel()
	k := record.Stream{Source: "dns", Account: "a"}
	at := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	h := sink.Held{}
	Add(h, k, "id1", at)
	Add(h, k, "id1", at)
	want := cursor.DeliveredOf("id1", at)
	if len(h[k]) != 2 || h[k][0] != want || h[k][1] != want {
		t.Fatalf("held %v, want %v twice", h[k], want)
	}
}
