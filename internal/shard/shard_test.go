package shard

import (
	"errors"
	"fmt"
	"testing"
)

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("tenant-%04d", i)
	}
	return out
}

// Every tenant has exactly one owner among N shards, whatever N.
func TestEveryTenantHasExactlyOneOwner(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 3, 5, 16} {
		per := make([]int, n)
		for _, name := range names(1000) {
			owners := 0
			for i := 0; i < n; i++ {
				if (Shard{Index: i, Count: n}).Owns(name) {
					owners++
					per[i]++
				}
			}
			if owners != 1 {
				t.Fatalf("N=%d: %s has %d owners, want 1", n, name, owners)
			}
		}
		// Spread: no shard holds less than half its fair share of 1,000.
		for i, c := range per {
			if c < 1000/n/2 {
				t.Errorf("N=%d: shard %d owns %d of 1000 tenants, fair share %d", n, i, c, 1000/n)
			}
		}
	}
}

// Going from N to N+1 shards moves only tenants to the new shard, about
// 1/(N+1) of them (measured over 1,000 names).
func TestAddingAShardMovesOnlyItsShare(t *testing.T) {
	t.Parallel()
	for n := 1; n <= 8; n++ {
		moved := 0
		for _, name := range names(1000) {
			before, after := Owner(name, n), Owner(name, n+1)
			if before == after {
				continue
			}
			if after != n {
				t.Fatalf("%d->%d shards: %s moved from %d to %d, not to the new shard", n, n+1, name, before, after)
			}
			moved++
		}
		want := 1000 / (n + 1)
		if moved < want*6/10 || moved > want*14/10 {
			t.Errorf("%d->%d shards: %d of 1000 tenants moved, want about %d", n, n+1, moved, want)
		}
		t.Logf("%d->%d shards: %d of 1000 tenants moved (1/(N+1) = %d)", n, n+1, moved, want)
	}
}

const pinnedOwners = "0 2 2 0"

// The hash is stable: these owners are what every version computes (a
// change would move tenants without their progress).
func TestOwnerIsStable(t *testing.T) {
	t.Parallel()
	got := fmt.Sprint(Owner("acme-corp", 3), Owner("globex", 3), Owner("initech", 3), Owner("umbrella", 7))
	if got != pinnedOwners {
		t.Errorf("owners %s, want %s: the hash changed", got, pinnedOwners)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Shard{"": {}, "0/1": {0, 1}, "2/3": {2, 3}, "1023/1024": {1023, 1024}} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"3", "3/3", "-1/3", "1/0", "a/3", "1/b", "0/1025", "1/3/4", "ordinal/3"} {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q): no error", in)
		}
	}
}

func TestOrdinalAndResolve(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{"collector-0": 0, "collector-12": 12, "my-collector-2.svc.cluster.local": 2} {
		got, err := Ordinal(in)
		if err != nil || got != want {
			t.Errorf("Ordinal(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"collector", "collector-", "-1", "collector-x1", "collector-01", ""} {
		if _, err := Ordinal(in); !errors.Is(err, ErrNoOrdinal) {
			t.Errorf("Ordinal(%q): %v, want ErrNoOrdinal", in, err)
		}
	}
	if s, err := Resolve("ordinal/3", "collector-2"); err != nil || s != (Shard{2, 3}) {
		t.Errorf("Resolve(ordinal/3, collector-2) = %v, %v", s, err)
	}
	if _, err := Resolve("ordinal/3", "collector-3"); err == nil {
		t.Error("Resolve(ordinal/3, collector-3): no error for an ordinal past the count")
	}
	if s, err := Resolve("1/2", "whatever"); err != nil || s != (Shard{1, 2}) {
		t.Errorf("Resolve(1/2) = %v, %v", s, err)
	}
}
