package source

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source/catalog"
)

// A configuration reload that adds streams of a functionality (Update)
// makes them share its running limiter (recheck.Limiter.Share), and one
// that drops streams makes them leave it: every stream of the
// functionality then polls at the cadence of the streams it has now, and
// an hour stays within the budget (C4: limit*(1-reserve)), with no 429.
// dns alone for one account polls every 15 s (the floor: 384 requests an
// hour for one stream would be one every 9.4 s); the reload to three
// accounts slows all three to 28.125 s (3600 s / (384 / 3)), the next
// to two accounts speeds both to 18.75 s. Before, the streams a reload
// added counted themselves alone in a limiter of their own: the running
// stream went on every 15 s and the two new ones polled every 18.75 s,
// 624 requests an hour where 432 are allowed.
func TestUpdate_C4_AReloadSharesTheBudgetWithTheStreamsRunning(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv, hc := startSimInMemory(t, func(c *apisim.Config) {
			c.Accounts = cadenceAccounts
			for s := range c.Rates {
				c.Rates[s] = 200
			}
		})
		cfg := simConfigInMemory()
		cfg.Edge.BaseURL = ""
		off, on, start := false, true, "10m"
		for _, s := range catalog.Specs() {
			cfg.Sources[s.Name] = catalog.SourceOverride{Enabled: &off}
		}
		cfg.Sources[catalog.SourceDNS] = catalog.SourceOverride{Enabled: &on, Start: &start}
		withAccounts := func(accounts ...string) catalog.Config {
			c := cfg
			c.Accounts = accounts
			return c
		}
		o := Options{Client: api.Options{HTTPClient: hc, Logger: discardLogger()}}
		set, err := Build(withAccounts("acme"), nil, o, false)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var wg sync.WaitGroup
		stops := map[record.Stream]context.CancelFunc{}
		run := func(p *Poller) {
			pctx, stop := context.WithCancel(ctx)
			stops[p.Stream()] = stop
			wg.Go(func() {
				if err := p.Run(pctx, cursor.Cursor{}, EmitFunc(func(context.Context, cursor.Page) error { return nil })); !errors.Is(err, context.Canceled) {
					t.Errorf("%s: Run = %v, want context.Canceled", p.Stream(), err)
				}
			})
		}
		for _, p := range set.Pollers {
			run(p)
		}
		// reload applies next as the app does: the added streams run, the
		// removed stop; then a cadence for every stream to step once, and
		// an hour measured.
		reload := func(next catalog.Config, every time.Duration) {
			t.Helper()
			upd, ch, err := set.Update(next, o, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range ch.Added {
				run(p)
			}
			for _, p := range ch.Removed {
				stops[p.Stream()]()
			}
			set = upd
			time.Sleep(10 * time.Minute)
			before := srv.Stats()
			time.Sleep(time.Hour)
			after := srv.Stats()
			want := Cadence{Every: every, Bound: CadenceBudget}
			for _, p := range set.Pollers {
				if got := p.Snapshot().Cadence; got != want {
					t.Errorf("%d accounts: %s polls %+v, want %+v", len(next.Accounts), p.Stream(), got, want)
				}
			}
			a, b := after.Get("sim-admin", catalog.SourceDNS), before.Get("sim-admin", catalog.SourceDNS)
			got, limited := a.Requests-b.Requests, a.RateLimited-b.RateLimited
			least := int64(float64(len(next.Accounts)) * float64(time.Hour) / float64(every) * 0.9)
			if limited != 0 || got > 432 || got < least {
				t.Errorf("%d accounts: %d dns requests in the hour after the reload (%d answered 429), want %d to 432",
					len(next.Accounts), got, limited, least)
			}
			t.Logf("%d accounts: %d dns requests an hour, each stream every %s", len(next.Accounts), got, every)
		}
		time.Sleep(30 * time.Minute)
		if got := set.Pollers[0].Snapshot().Cadence; got != (Cadence{Every: MinCadence, Bound: CadenceFloor}) {
			t.Errorf("one account: %+v, want the floor", got)
		}
		reload(withAccounts(cadenceAccounts...), 28125*time.Millisecond)
		reload(withAccounts("acme", "acme-dev"), 18750*time.Millisecond)
		cancel()
		wg.Wait()
	})
}
