package file

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/svcexport/collector/internal/record"
)

// tenantBatch is batch of tenant's stream: the same records, the same ids,
// as any other tenant's of the same arguments.
func tenantBatch(t *testing.T, tenant string, first, n int, seq uint64) *record.Batch {
	t.Helper()
	b := batch(t, "dns", "acme", first, n)
	b.Tenant, b.Seq = tenant, seq
	for i := range b.Envelopes {
		b.Envelopes[i].Tenant = tenant
	}
	return b
}

// Issue 32: with {tenant} in the path, two tenants' identical records are
// both stored, each under DIR/TENANT/, in files of their own; after a
// crash Recover cuts each tenant's files at its own mark entry, never the
// other's. A path without {tenant} refuses a tenant's batch for good.
func TestTenantsFilesAreApartAndRecoveredEachAtItsMark(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t.TempDir())
	cfg.Path = TenantsPath
	ctx := context.Background()
	s := openSink(t, cfg, nil)
	a0, a1 := tenantBatch(t, "alpha", 0, 10, 0), tenantBatch(t, "alpha", 10, 10, 1)
	b0, b1 := tenantBatch(t, "beta", 0, 10, 0), tenantBatch(t, "beta", 10, 10, 1)
	for _, b := range []*record.Batch{a0, b0, a1, b1} {
		mustWrite(t, s, b)
	}
	// alpha's commit covers its batch 0 only, beta's both.
	mark, err := s.Mark(ctx, map[record.Stream]uint64{a0.Stream(): 1, b0.Stream(): 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	s = openSink(t, cfg, mark)
	defer s.Shutdown(ctx)
	alpha, beta := idsOf(t, filepath.Join(cfg.Dir, "alpha"), "dns", "acme"), idsOf(t, filepath.Join(cfg.Dir, "beta"), "dns", "acme")
	if !slices.Equal(alpha, idsOfBatches(a0)) {
		t.Errorf("alpha after Recover: %d records, want the %d of its batch 0", len(alpha), len(a0.Envelopes))
	}
	if !slices.Equal(beta, idsOfBatches(b0, b1)) {
		t.Errorf("beta after Recover: %d records, want its %d", len(beta), 20)
	}
	if !slices.Equal(idsOfBatches(a0), idsOfBatches(b0)) {
		t.Fatal("the tenants' records differ: the test proves nothing")
	}

	plain := testConfig(t.TempDir())
	ps := openSink(t, plain, nil)
	defer ps.Shutdown(ctx)
	if err := ps.Write(ctx, a0); err == nil {
		t.Error("a path without {tenant} took a tenant's batch")
	}
}
