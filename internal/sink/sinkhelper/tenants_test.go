package sinkhelper

import (
	"encoding/json"
	"testing"

	"github.com/svcexport/collector/internal/record"
)

// Issue 32: two tenants' streams of one source and account are covered
// apart: each batch name carries its tenant, the mark stores each
// tenant's entry (and loads back the same), and a record read back is
// taken for its own tenant's stream, uncovered only past that stream's
// entry. The one-tenant form's names and marks are as before.
func TestCoverageKeepsTenantsApart(t *testing.T) {
	t.Parallel()
	c := NewCoverage()
	alpha := record.Stream{Tenant: "alpha", Source: "dns", Account: "acme"}
	beta := record.Stream{Tenant: "beta", Source: "dns", Account: "acme"}
	one := record.Stream{Source: "dns", Account: "acme"}
	name := func(k record.Stream, seq uint64) string {
		return c.BatchName(&record.Batch{Tenant: k.Tenant, Source: k.Source, Account: k.Account, Seq: seq})
	}
	if n := name(one, 5); n != c.run+"/5/acme" {
		t.Errorf("one-tenant batch name %q", n)
	}
	b, err := json.Marshal(c.Advance(map[record.Stream]uint64{alpha: 10, beta: 3, one: 7}))
	if err != nil {
		t.Fatal(err)
	}
	var m Covered
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	unc := m.Uncovered()
	for _, tc := range []struct {
		k    record.Stream
		seq  uint64
		want bool
	}{{alpha, 5, false}, {alpha, 10, true}, {beta, 5, true}, {beta, 2, false}, {one, 5, false}, {one, 7, true}} {
		got, ok := unc("dns", name(tc.k, tc.seq))
		if ok != tc.want || ok && got != tc.k {
			t.Errorf("%s batch %d: %v %v, want uncovered %v", tc.k, tc.seq, got, ok, tc.want)
		}
	}
}
