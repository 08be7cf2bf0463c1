package catalog

import (
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
	we.BaseURL, we.Token, we.MaxRows, we.Accounts = "https://edge.example.test", secret.New("edge-tok"), 500, []string{"acme"}
	if !reflect.DeepEqual(cfg.Edge, we) {
		t.Errorf("edge = %+v\nwant %+v", cfg.Edge, we)
	}

	dns := cfg.Sources.Resolve("dns")
	wantDNS := SourceSettings{
		Enabled: true, Start: "7d", Lag: 10 * time.Minute, Interval: time.Minute, MaxWindow: Day,
		Filters: []Filter{{Expression: "eq", Field: "fqdn", Value: "example.com"}, {Expression: "in", Field: "mid", Values: []string{"1", "2"}}},
		Returns: []string{"createdTime", "fqdn"},
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
