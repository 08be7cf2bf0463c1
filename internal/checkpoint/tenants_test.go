package checkpoint

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// Issue 32: a checkpoint of today (one tenant) opens unchanged and takes
// the streams of named tenants next to its own: each tenant's states and
// delivered sets are its own even for the same source and account, every
// stored key of a tenant starts with "TENANT/" (its progress is one unit,
// for the move between collectors that comes next), and the keys and
// values of the one-tenant form stay byte for byte those of the old file.
func TestTenantsStreamsLiveNextToACheckpointOfToday(t *testing.T) {
	t.Parallel()
	path := copyFile(t, compatFile, t.TempDir())
	old := rawStates(t, path)
	d, err := Open(path, WithClock(func() time.Time { return t0 }))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	one := record.Stream{Source: "dns", Account: "acme"}
	alpha := record.Stream{Tenant: "alpha", Source: "dns", Account: "acme"}
	beta := record.Stream{Tenant: "beta", Source: "dns", Account: "acme"}
	ids := []cursor.Delivered{cursor.DeliveredOf("same-record-id", t0.Add(-time.Hour))}
	err = d.Apply(ctx, Changes{
		States: map[record.Stream]State{
			alpha: {Cursor: cursor.Cursor{Watermark: t0.Add(-2 * time.Hour)}, Delivered: 7, Updated: t0},
			beta:  {Cursor: cursor.Cursor{Watermark: t0.Add(-3 * time.Hour)}, Delivered: 8, Updated: t0},
		},
		Delivered: map[record.Stream][]cursor.Delivered{alpha: ids},
	})
	if err != nil {
		t.Fatal(err)
	}
	all, err := d.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	statesEqual(t, all[one], compatStates()[one])
	if all[alpha].Delivered != 7 || all[beta].Delivered != 8 || !all[beta].Watermark.Equal(t0.Add(-3*time.Hour)) {
		t.Errorf("tenants' states: alpha %+v, beta %+v", all[alpha], all[beta])
	}
	// The record alpha delivered is not beta's, nor the one-tenant form's.
	for k, want := range map[record.Stream]int{alpha: 1, beta: 0, one: 0} {
		got, err := d.DeliveredOf(ctx, k, ids)
		if err != nil {
			t.Fatal(err)
		}
		if n := got[0]; n != want {
			t.Errorf("%s: %d of the record delivered, want %d", k, n, want)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	now := rawStates(t, path)
	for k, v := range old {
		if now[k] != v {
			t.Errorf("key %q of the one-tenant form changed:\n now %s\n was %s", k, now[k], v)
		}
	}
	tenantKeys := 0
	for k := range now {
		if _, was := old[k]; was {
			continue
		}
		tenantKeys++
		if !strings.HasPrefix(k, "alpha/") && !strings.HasPrefix(k, "beta/") {
			t.Errorf("stored key %q of a tenant does not start with its tenant", k)
		}
	}
	if tenantKeys != 2 {
		t.Errorf("%d keys of tenants stored, want 2", tenantKeys)
	}
}

// Issue 32: a reset names its tenant. Resetting tenant alpha's dns forgets
// alpha's dns streams (states, window logs, delivered sets) and nothing of
// beta's or of the one-tenant form's, though all have the same source and
// account; a reset of the one-tenant form leaves every tenant's.
func TestResetForgetsOneTenantsStreamsOnly(t *testing.T) {
	t.Parallel()
	d, err := Open(t.TempDir()+"/cp.db", WithClock(func() time.Time { return t0 }))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	one := record.Stream{Source: "dns", Account: "acme"}
	alpha := record.Stream{Tenant: "alpha", Source: "dns", Account: "acme"}
	alphaDev := record.Stream{Tenant: "alpha", Source: "dns", Account: "acme-dev"}
	beta := record.Stream{Tenant: "beta", Source: "dns", Account: "acme"}
	ids := []cursor.Delivered{cursor.DeliveredOf("same-record-id", t0.Add(-time.Hour))}
	states := map[record.Stream]State{}
	delivered := map[record.Stream][]cursor.Delivered{}
	for _, k := range []record.Stream{one, alpha, alphaDev, beta} {
		states[k] = State{Cursor: cursor.Cursor{Watermark: t0.Add(-time.Hour)}, Delivered: 1, Updated: t0}
		delivered[k] = ids
	}
	if err := d.Apply(ctx, Changes{States: states, Delivered: delivered}); err != nil {
		t.Fatal(err)
	}
	left := func() map[record.Stream]bool {
		all, err := d.All(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[record.Stream]bool{}
		for k := range all {
			got, err := d.DeliveredOf(ctx, k, ids)
			if err != nil {
				t.Fatal(err)
			}
			out[k] = got[0] == 1
		}
		return out
	}
	if n, err := d.Reset(ctx, "alpha", "dns", ""); n != 2 || err != nil {
		t.Fatalf("reset of alpha's dns: %d, %v; want its 2 streams", n, err)
	}
	if got := left(); len(got) != 2 || !got[one] || !got[beta] {
		t.Errorf("after the reset of alpha's dns: %v; want the one-tenant form's and beta's, with their delivered sets", got)
	}
	if n, err := d.Reset(ctx, "", "dns", "acme"); n != 1 || err != nil {
		t.Fatalf("reset of the one-tenant form's dns/acme: %d, %v", n, err)
	}
	if got := left(); len(got) != 1 || !got[beta] {
		t.Errorf("after the reset of the one-tenant form's dns/acme: %v; want beta's", got)
	}
}
