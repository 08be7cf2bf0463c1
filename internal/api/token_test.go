package api

import (
	"testing"
	"time"
)

func TestRenewAfter_C1(t *testing.T) {
	t.Parallel()
	for life, want := range map[time.Duration]time.Duration{
		time.Hour:        48 * time.Minute,
		10 * time.Minute: 5 * time.Minute,
		24 * time.Hour:   24 * time.Hour * 8 / 10,
		time.Minute:      30 * time.Second,
	} {
		if got := renewAfter(life); got != want {
			t.Errorf("renewAfter(%v) = %v, want %v", life, got, want)
		}
	}
}

// C1, C4: renewals are paced only while tokens die unused one after the
// other: a token refused before its requests' answers arrived (a
// revocation's 401 overtaking them) is no strike when its predecessor
// served, and a request that goes through with the current token or its
// predecessor clears the strikes. The pace doubles from api.retry.initial
// up to api.retry.max, from when the last token was obtained.
func TestCoreTokens_C1_C4_OnlyTokensDyingUnusedInARowPaceRenewals(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	ct := &coreTokens{c: &Client{retry: RetryConfig{Initial: time.Second, Max: 3 * time.Second}}}
	mint := func(tok string) { ct.install(tok, t0.Add(time.Hour), t0) }
	pace := func(want time.Duration) {
		t.Helper()
		if got := ct.pace(t0); got != want {
			t.Fatalf("strikes %d: pace %v, want %v", ct.strikes, got, want)
		}
	}
	mint("a")
	ct.refused("a") // the first token: no predecessor to judge
	pace(0)
	mint("b")
	ct.refused("b") // b and a unused
	pace(time.Second)
	mint("c")
	ct.refused("c")
	pace(2 * time.Second)
	mint("d")
	ct.refused("d")
	mint("e")
	ct.refused("e")
	pace(3 * time.Second) // capped at api.retry.max
	ct.served("e")        // a late answer of the predecessor
	pace(0)
	mint("f")
	ct.refused("f") // f unused, but e served
	pace(0)
	ct.refused("f") // a 401 on a token already dropped changes nothing
	ct.refused("e")
	mint("g")
	ct.served("g")
	ct.refused("g")
	pace(0)
	mint("h")
	if ct.pace(t0) != 0 {
		t.Fatal("a current token is never paced (scheduled renewals)")
	}
}
