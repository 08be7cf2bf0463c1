package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/testinfra/simtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Defaults, then the YAML file, then the flags given.
func TestConfigFileThenFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sim.yaml")
	yml := `
seed: 7
accounts: [north, south]
keys:
  - {key_id: k1, secret: s1, user: u1, role: org_admin, account: north}
rates: {dns: 123}
account_rates: {south: {dns: 5}}
page_size: 100
result_cap: 1000
next_page_ttl: 3s
rate_limit: 60
rate_period: 5s
late_max: 10m
`
	if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, o, err := parseArgs([]string{"--config", path, "--page-size", "200", "--rate", "connections=9", "--listen", "127.0.0.1:0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := apisim.DefaultConfig()
	want.Seed = 7
	want.Accounts = []string{"north", "south"}
	want.Keys = []apisim.KeyConfig{{KeyID: "k1", Secret: "s1", User: "u1", Role: "org_admin", Account: "north"}}
	want.Rates["dns"] = 123
	want.Rates["connections"] = 9
	want.AccountRates = map[string]map[string]float64{"south": {"dns": 5}}
	want.PageSize = 200
	want.ResultCap = 1000
	want.NextPageTTL = 3 * time.Second
	want.RateLimit = 60
	want.RatePeriod = 5 * time.Second
	want.LateMax = 10 * time.Minute
	if !reflect.DeepEqual(cfg, want) { // Now is nil in both
		t.Fatalf("config\n%+v\nwant\n%+v", cfg, want)
	}
	if o.listen != "127.0.0.1:0" {
		t.Fatalf("listen %q", o.listen)
	}
}

func TestBadConfigsAreRejected(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	_ = os.WriteFile(path, []byte("page_sise: 10\n"), 0o600)
	for _, args := range [][]string{
		{"--config", path},
		{"--page-size", "0"},
		{"--key", "a:b:c"},
		{"--rate", "nosuch=1"},
		{"extra"},
	} {
		if _, _, err := parseArgs(args, io.Discard); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	var help bytes.Buffer
	if _, _, err := parseArgs([]string{"--help"}, &help); !errors.Is(err, flag.ErrHelp) || !strings.Contains(help.String(), "-next-page-ttl") {
		t.Fatalf("--help: %v\n%s", err, help.String())
	}
}

// The command prints its URLs and credentials and stops when its context ends.
func TestRunServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out simtest.SyncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"--listen", "127.0.0.1:0"}, &out, io.Discard) }()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "sim-secret") {
		if time.Now().After(deadline) {
			t.Fatalf("no banner: %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(out.String(), "/edge") {
		t.Fatalf("banner %q", out.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
