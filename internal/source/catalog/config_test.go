package catalog

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/secret"
)

func loadYAML(t *testing.T, path string) Config {
	t.Helper()
	k := koanf.New(".")
	if err := k.Load(file.Provider(path), yaml.Parser()); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	if err := k.UnmarshalWithConf("", &cfg, koanf.UnmarshalConf{Tag: "koanf"}); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestConfig_YAMLOverridesOnlyWhatItNames(t *testing.T) {
	cfg := loadYAML(t, "testdata/full.yaml")
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	want := api.DefaultConfig()
	want.BaseURL, want.KeyID, want.Secret = "https://api.example.test", "KEY1", secret.New("s3cr3t")
	want.TokenTTL, want.User = 2*time.Hour, "svc-user"
	want.Rate = api.RateConfig{Limit: 240, Period: 30 * time.Minute, Reserve: 0.2}
	want.MaxHistory = 30 * Day
	want.Retry = api.RetryConfig{Initial: 2 * time.Second, Max: time.Minute, MaxAttempts: 5}
	if !reflect.DeepEqual(cfg.API, want) {
		t.Errorf("api = %+v\nwant %+v", cfg.API, want)
	}
	if cfg.API.Secret.Reveal() != "s3cr3t" {
		t.Errorf("secret not loaded")
	}
	if !reflect.DeepEqual(cfg.Accounts, []string{"acme", "acme-dev"}) || !cfg.OrgAuditLogs {
		t.Errorf("accounts = %v org = %v", cfg.Accounts, cfg.OrgAuditLogs)
	}
	we := DefaultEdgeConfig()
	we.BaseURL, we.Token, we.MaxRows, we.Account = "https://edge.example.test", secret.New("edge-tok"), 500, "edge-main"
	if !reflect.DeepEqual(cfg.Edge, we) {
		t.Errorf("edge = %+v\nwant %+v", cfg.Edge, we)
	}

	dns := cfg.Sources.Resolve("dns")
	wantDNS := SourceSettings{
		Enabled: true, Start: "7d", Lag: 10 * time.Minute, Interval: time.Minute, MaxWindow: Day,
		Filters: []Filter{{Expression: "eq", Field: "fqdn", Value: "example.com"}, {Expression: "in", Field: "mid", Values: []string{"1", "2"}}},
		Returns: []string{"createdTime", "fqdn"},
		Recheck: DefaultSource().Recheck, RecheckShare: DefaultSource().RecheckShare,
		Inventory: InventoryOff, InventoryInterval: DefaultInventoryInterval,
	}
	if !reflect.DeepEqual(dns, wantDNS) {
		t.Errorf("dns = %+v\nwant %+v", dns, wantDNS)
	}
	conn := cfg.Sources.Resolve("connections")
	wantConn := DefaultSource()
	wantConn.Lag, wantConn.Interval = 10*time.Minute, time.Minute
	if !reflect.DeepEqual(conn, wantConn) {
		t.Errorf("connections inherits the default block: got %+v want %+v", conn, wantConn)
	}
	if cfg.Sources.Resolve("edge_alerts").Enabled {
		t.Error("edge_alerts should be disabled")
	}
}

func TestConfig_ValidateNamesEveryBadKey(t *testing.T) {
	err := loadYAML(t, "testdata/bad.yaml").Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"api.base_url: must be an http or https URL",
		"api.key_id: must be set",
		"api.secret: must be set",
		"api.token_ttl: must be at most 24h",
		"api.rate.reserve: must be in [0, 1)",
		"api.retry.max_attempts: must not be negative",
		"sources.dns.max_window: must be at most 7 days",
		"sources.dns.filters[0]: in takes a non-empty values list",
		"sources.nosuch: unknown source",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestConfig_DefaultsAreTheContractsValues(t *testing.T) {
	c := DefaultConfig()
	if c.API.Rate != (api.RateConfig{Limit: 480, Period: time.Hour, Reserve: 0.1}) || c.API.PageRows != 5000 || c.API.ResultCap != 500000 ||
		c.API.MaxPages != 100 || c.API.NextPageTTL != 24*time.Hour || c.API.MaxHistory != 92*Day ||
		c.API.TokenTTL != time.Hour || c.API.Timeout != 125*time.Second || c.API.SecretHeader != "X-SVC-UAKS" {
		t.Errorf("api defaults = %+v", c.API)
	}
	if c.Edge.MaxRows != 10000 || c.Edge.AlertStatusFilter != "OPEN,IN_PROGRESS,CLOSED" || c.Edge.AlertUpdateLookback != 24*time.Hour {
		t.Errorf("edge defaults = %+v", c.Edge)
	}
	if d := c.Sources.Resolve("dns"); !reflect.DeepEqual(d, DefaultSource()) {
		t.Errorf("source defaults = %+v", d)
	}
}

func TestConfig_SecretNeverPrints(t *testing.T) {
	c := DefaultConfig()
	c.API.Secret = secret.New("hunter2")
	c.Edge.Token = secret.New("edge-hunter2")
	for _, s := range []string{
		strings.Join([]string{c.API.Secret.String()}, ""),
		fmtAll(c),
	} {
		if strings.Contains(s, "hunter2") {
			t.Fatalf("secret printed: %s", s)
		}
	}
}

func TestConfig_ReturnsMustKeepTheRecordTime_C3(t *testing.T) {
	cfg := DefaultConfig()
	cfg.API.BaseURL, cfg.API.KeyID, cfg.API.Secret = "http://x", "k", secret.New("s")
	cfg.Sources["dns"] = SourceOverride{Returns: []string{"fqdn"}}
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "sources.dns.returns: must include createdTime") {
		t.Fatalf("err = %v", err)
	}
}

// C6: edge.accounts is gone: the edge API has no account selection, so a
// configuration that still sets it is refused with the reason, even while
// the edge sources are off; edge.account names the edge streams.
func TestConfig_EdgeAccountsIsRefusedWithTheReason_C6(t *testing.T) {
	cfg := DefaultConfig()
	cfg.API.BaseURL, cfg.API.KeyID, cfg.API.Secret = "http://x", "k", secret.New("s")
	if cfg.Edge.Account != "edge" {
		t.Fatalf("edge.account default %q, want edge", cfg.Edge.Account)
	}
	cfg.Edge.Accounts = []string{"acme"}
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "edge.accounts: removed") || !strings.Contains(err.Error(), "C6") {
		t.Fatalf("err = %v", err)
	}
	cfg.Edge.Accounts = []string{}
	cfg.Edge.BaseURL, cfg.Edge.Token = "http://edge", secret.New("t")
	cfg.Edge.Account = " edge"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "edge.account: ") {
		t.Fatalf("padded edge.account: %v", err)
	}
}

// C3, C6: filters and returns where the endpoint cannot take them
// (cloud_activities is a GET with startTime and endTime only; the edge API
// has its own parameters) are refused, naming the key they came from,
// instead of being ignored at run time.
func TestConfig_FiltersWhereTheEndpointCannotTakeThemAreRefused_C3_C6(t *testing.T) {
	base := func() Config {
		cfg := DefaultConfig()
		cfg.API.BaseURL, cfg.API.KeyID, cfg.API.Secret = "http://x", "k", secret.New("s")
		cfg.Edge.BaseURL, cfg.Edge.Token = "http://edge", secret.New("t")
		return cfg
	}
	f := []Filter{{Expression: "eq", Field: "eventType", Value: "NewUser"}}
	cases := []struct {
		name string
		set  func(SourcesConfig)
		want []string
	}{
		{"filters on cloud_activities", func(s SourcesConfig) { s["cloud_activities"] = SourceOverride{Filters: f} },
			[]string{"sources.cloud_activities.filters: cloud_activities cannot take filters"}},
		{"returns on edge_alerts", func(s SourcesConfig) { s["edge_alerts"] = SourceOverride{Returns: []string{"create_time"}} },
			[]string{"sources.edge_alerts.returns: edge_alerts cannot take returns"}},
		{"default filters reach the GET and the edge sources", func(s SourcesConfig) {
			d := s[DefaultSourcesKey]
			d.Filters = f
			s[DefaultSourcesKey] = d
		}, []string{"sources.default.filters: cloud_activities cannot take filters", "sources.default.filters: edge_audit_events cannot take filters"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := base()
			c.set(cfg.Sources)
			err := cfg.Validate()
			for _, w := range c.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
		})
	}
	t.Run("a disabled source may keep its filters", func(t *testing.T) {
		cfg := base()
		off := false
		cfg.Sources["cloud_activities"] = SourceOverride{Enabled: &off, Filters: f}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
	})
}

// C5: a search body over api.max_request_bytes would be refused with 400 on
// every window: it is a configuration error naming the filters.
func TestConfig_SearchBodyOverTheRequestLimitIsRefused_C5(t *testing.T) {
	cfg := DefaultConfig()
	cfg.API.BaseURL, cfg.API.KeyID, cfg.API.Secret = "http://x", "k", secret.New("s")
	if cfg.API.MaxRequestBytes != 1<<20 {
		t.Fatalf("api.max_request_bytes default %d", cfg.API.MaxRequestBytes)
	}
	values := make([]string, 0, 100000)
	for i := range 100000 {
		values = append(values, fmt.Sprintf("host-%05d", i))
	}
	cfg.Sources["dns"] = SourceOverride{Filters: []Filter{{Expression: "in", Field: "fqdn", Values: values}}}
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "sources.dns.filters: the search body of dns is") ||
		!strings.Contains(err.Error(), "api.max_request_bytes") {
		t.Fatalf("err = %v", err)
	}
	cfg.API.MaxRequestBytes = 4 << 20
	if err := cfg.Validate(); err != nil {
		t.Fatalf("under a raised limit: %v", err)
	}
}

func TestConfig_AllowedOriginsAreValidated(t *testing.T) {
	cfg := DefaultConfig()
	cfg.API.BaseURL, cfg.API.KeyID, cfg.API.Secret = "https://api.example.test", "k", secret.New("s")
	cfg.API.AllowedOrigins = []string{"https://pages.example.test", "https://ok.test:8443", "pages.example.test",
		"https://x.test/path", "https://u:pw-Zq@x.test", "https://x.test:99999", "ftp://x.test"}
	cfg.Edge.BaseURL, cfg.Edge.Token = "https://edge.example.test", secret.New("t")
	cfg.Edge.AllowedOrigins = []string{"http://edge-pages.test", "https://edge.test?x=1"}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"api.allowed_origins[2]:", "api.allowed_origins[3]:", "api.allowed_origins[4]:", "api.allowed_origins[5]:",
		"api.allowed_origins[6]:", "edge.allowed_origins[1]:",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	for _, bad := range []string{"api.allowed_origins[0]", "api.allowed_origins[1]", "edge.allowed_origins[0]", "pw-Zq"} {
		if strings.Contains(err.Error(), bad) {
			t.Errorf("error names %q:\n%v", bad, err)
		}
	}
	if d := DefaultConfig(); d.API.AllowedOrigins != nil || d.Edge.AllowedOrigins != nil {
		t.Errorf("allowed origins are not empty by default")
	}
}
