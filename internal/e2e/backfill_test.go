package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// Nine sources x two accounts, three days backfilled with --once: for every
// (source, account, day) the deduplicated ids match /_truth (C7, C8).
func TestBackfillOfNineSourcesAndTwoAccountsMatchesTruth(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates)
	start := time.Now().UTC().Add(-72 * time.Hour).Truncate(time.Minute)
	c := harness.New(t, harness.Config{Sim: sim, Start: start})
	logs := c.RunOnce(t, 5*time.Minute).Logs

	out := c.ReadOutput(t)
	n := c.Compare(t, out, harness.AllStreams())
	if n < 100_000 {
		t.Fatalf("only %d records compared; the test data is too thin to mean much", n)
	}
	if d := out.Duplicates(); d != 0 {
		t.Errorf("%d duplicates in a clean run without overlap", d)
	}
	// The healthy run spent the production-shaped budget without a 429 (C4).
	for _, cnt := range sim.Stats().Counters {
		if cnt.RateLimited != 0 {
			t.Errorf("%s/%s: %d requests answered 429", cnt.User, cnt.Functionality, cnt.RateLimited)
		}
	}
	for _, secret := range []string{harness.Secret, harness.EdgeToken} {
		if strings.Contains(logs, secret) {
			t.Fatalf("the logs hold a secret")
		}
	}
	t.Logf("%d records, %d deliveries", n, out.Total)
}

// A source dense enough that a 1-day window passes the 500,000-row cap: the
// collector splits the window before walking its chain (C3), is complete,
// and fetches at most the first page of each window it splits in vain.
func TestDenseSourceIsSplitUnderTheCapAndComplete(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates, func(c *apisim.Config) {
		c.Rates = map[string]float64{"dns": 40_000}
		c.BurstProbability = 0
	})
	start := time.Now().UTC().Add(-16 * time.Hour).Truncate(time.Minute)
	c := harness.New(t, harness.Config{Sim: sim, Start: start, Accounts: []string{"acme"}, Sources: []string{"dns"}, Interval: harness.Omit})
	c.RunOnce(t, 10*time.Minute)

	k := record.Stream{Source: "dns", Account: "acme"}
	n := c.Compare(t, c.ReadOutput(t), []record.Stream{k})
	if n < 500_000 {
		t.Fatalf("only %d records: the window never passed the cap, the test proves nothing", n)
	}
	st := sim.Stats().Get("sim-admin", "dns")
	// Rows served beyond the distinct records are the first pages of windows
	// that had to be split; a chain walked to the cap would add 500,000.
	if waste := st.RowsServed - n; waste < 0 || waste > 5*5000 {
		t.Errorf("served %d rows for %d records: %d wasted", st.RowsServed, n, waste)
	}
}
