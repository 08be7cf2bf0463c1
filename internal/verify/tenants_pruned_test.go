package verify_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/file"
	"github.com/svcexport/collector/internal/verify"
)

// Issue 32 with retention: each tenant's record of the files retention
// deleted is its own, and verify --tenant reads that tenant's alone. Two
// tenants write the same stream (dns/acme) a file a day: alpha on days 0,
// 2 and 3 (day 1 is a real gap), beta on days 0 to 3; retention keeps the
// newest two files of each, so it deletes alpha's day 0 and beta's days 0
// and 1. alpha's day 0 is pruned, its day 1 still a gap (beta's pruned
// day 1 is not alpha's); beta's days 0 and 1 are pruned. Before, the
// sink recorded them under DIR/.pruned/TENANT/ and verify read
// DIR/.pruned/SOURCE/: every tenant's pruned days looked like gaps.
func TestVerifyReadsEachTenantsPrunedFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := file.DefaultConfig()
	cfg.Dir, cfg.Fsync, cfg.Path = dir, false, file.TenantsPath
	cfg.MaxBytes = 1 // a file per batch
	from := time.Now().UTC().Truncate(verify.Day).Add(-5 * verify.Day)
	day := func(i int) time.Time { return from.Add(time.Duration(i) * verify.Day) }
	days := map[string][]int{"alpha": {0, 2, 3}, "beta": {0, 1, 2, 3}}
	ctx := context.Background()
	sk, err := file.New(cfg, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := sk.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var bld record.Builder
	for _, tenant := range []string{"alpha", "beta"} {
		for seq, d := range days[tenant] {
			a, b := day(d), day(d+1)
			batch := &record.Batch{Tenant: tenant, Source: "dns", Account: "acme", WindowStart: a, WindowEnd: b, Seq: uint64(seq)}
			for i := range 10 {
				raw := fmt.Appendf(nil, `{"id":"%s-%d-%d","createdTime":%q}`, tenant, d, i, a.Add(time.Duration(i)*time.Hour).Format(time.RFC3339))
				e, flaw := bld.Build("dns", "acme", "createdTime", a, b, b.Add(time.Hour), raw)
				if flaw != 0 {
					t.Fatal(flaw)
				}
				e.Tenant = tenant
				batch.Envelopes = append(batch.Envelopes, e)
			}
			if err := sk.Write(ctx, batch); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := sk.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	// The next run keeps the newest two files of each stream.
	cfg.Retention.MaxFiles = 2
	sk2, err := file.New(cfg, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := sk2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sk2.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	for tenant, want := range map[string][]int{"alpha": {0}, "beta": {0, 1}} {
		k := record.Stream{Tenant: tenant, Source: "dns", Account: "acme"}
		if ps, err := file.ReadPruned(dir, k); err != nil || len(ps) != len(want) {
			t.Errorf("%s: %d files recorded pruned (%v), want %d", tenant, len(ps), err, len(want))
		}
		var targets []verify.Target
		for d := range 4 {
			targets = append(targets, verify.Target{Stream: k, Day: day(d), Start: day(d), End: day(d + 1)})
		}
		got, err := verify.FileSink{Dir: dir, Path: cfg.Path}.Pruned(ctx, targets)
		if err != nil {
			t.Fatal(err)
		}
		var pruned []int
		for d := range 4 {
			if got[targets[d].Key()] {
				pruned = append(pruned, d)
			}
		}
		if !slices.Equal(pruned, want) {
			t.Errorf("%s: days %v pruned, want %v", tenant, pruned, want)
		}
	}
}
