package apicount_test

import (
	"context"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/testinfra/simtest"
	"github.com/svcexport/collector/internal/verify"
	"github.com/svcexport/collector/internal/verify/apicount"
)

var _ verify.OnceCounter = (*apicount.Counter)(nil)

// A core window is counted with one request, its first page's totalRows
// (C3), and agrees with the simulator's truth; a window below the cap is
// not cut.
func TestCountOnceIsTheFirstPagesTotalRows(t *testing.T) {
	srv := simtest.Start(t, func(c *apisim.Config) { c.LateMax = 0 })
	cfg := catalog.DefaultConfig()
	cfg.API.BaseURL, cfg.API.KeyID, cfg.API.Secret = srv.URL(), "sim-key", secret.New("sim-secret")
	c, err := apicount.New(cfg, api.Options{})
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(-time.Hour).Truncate(time.Minute)
	start := end.Add(-3 * time.Hour)
	for _, k := range []record.Stream{{Source: "dns", Account: "acme"}, {Source: "dns", Account: "acme-dev"}} {
		n, cut, err := c.CountOnce(context.Background(), k, start, end)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := srv.Truth(k.Source, k.Account, start, end)
		if n != want || cut || want == 0 {
			t.Errorf("%s: counted %d (cut %v), truth %d", k, n, cut, want)
		}
	}
	if c.Requests() != 2 {
		t.Errorf("%d requests, want one per window", c.Requests())
	}
	if _, _, err := c.CountOnce(context.Background(), record.Stream{Source: "nosuch", Account: "acme"}, start, end); err == nil {
		t.Error("an unknown source was counted")
	}
}
