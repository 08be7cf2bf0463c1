package sinkhelper

import (
	"testing"

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
