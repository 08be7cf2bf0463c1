package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcexport/collector/internal/sink/file"
)

// threeTenants is a configuration of three tenants, each with its own API
// and secret source: a file, the environment, a ${NAME} reference.
func threeTenants(t *testing.T) (yaml string, env []string) {
	t.Helper()
	secretFile := filepath.Join(t.TempDir(), "a.secret")
	if err := os.WriteFile(secretFile, []byte("file-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	yaml = `sources:
  default: {start: 2026-11-20T00:00:00Z}
tenants:
  - name: alpha
    api: {base_url: http://127.0.0.1:1, key_id: ka, secret_file: ` + secretFile + `, rate: {limit: 100}}
    accounts: [acme]
  - name: beta_2
    api: {base_url: http://127.0.0.1:2, key_id: kb}
    edge: {base_url: http://127.0.0.1:2/edge}
    org_audit_logs: true
    sources:
      dns: {enabled: false}
  - name: Gamma-3
    api: {base_url: http://127.0.0.1:3, key_id: kc, secret: "${GAMMA_SECRET}"}
`
	env = []string{"COLLECTOR_TENANTS__1__API__SECRET=env-secret-b", "COLLECTOR_TENANTS__1__EDGE__TOKEN=env-token-b", "GAMMA_SECRET=ref-secret-c"}
	return yaml, env
}

// tenants: each entry its own api, edge, accounts and sources overrides;
// each secret from a file, the environment (COLLECTOR_TENANTS__<i>__...)
// or a reference; every stream carries its tenant.
func TestTenantsParseEachIntoItsOwnSourceConfig(t *testing.T) {
	t.Parallel()
	yaml, env := threeTenants(t)
	cfg, err := Load(writeFile(t, yaml), env)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	scs := cfg.SourceConfigs()
	if len(scs) != 3 {
		t.Fatalf("%d source configs, want 3", len(scs))
	}
	a, b, c := scs[0], scs[1], scs[2]
	if a.Tenant != "alpha" || b.Tenant != "beta_2" || c.Tenant != "Gamma-3" {
		t.Errorf("tenants %q %q %q", a.Tenant, b.Tenant, c.Tenant)
	}
	if a.API.KeyID != "ka" || a.API.SecretFile == "" || a.API.Rate.Limit != 100 || len(a.Accounts) != 1 {
		t.Errorf("alpha: %+v", a.API)
	}
	if b.API.Secret.Reveal() != "env-secret-b" || b.Edge.Token.Reveal() != "env-token-b" || !b.OrgAuditLogs || b.Edge.BaseURL == "" {
		t.Errorf("beta_2: secret, token, org_audit_logs or edge not its own")
	}
	if c.API.Secret.Reveal() != "ref-secret-c" {
		t.Errorf("Gamma-3: secret not from its reference")
	}
	// Defaults of their own: beta's rate is the built-in one, not alpha's.
	if b.API.Rate.Limit == 100 || b.API.PageRows == 0 {
		t.Errorf("beta_2's api does not start from the defaults: rate %d, page_rows %d", b.API.Rate.Limit, b.API.PageRows)
	}
	// Sources: beta turns dns off, the others inherit the top-level start.
	if b.Sources.Resolve("dns").Enabled || !a.Sources.Resolve("dns").Enabled {
		t.Errorf("dns enabled: alpha %v, beta %v", a.Sources.Resolve("dns").Enabled, b.Sources.Resolve("dns").Enabled)
	}
	if got := b.Sources.Resolve("connections").Start; got != "2026-11-20T00:00:00Z" {
		t.Errorf("beta's connections start %q, want the top-level default's", got)
	}
	// With tenants, a file sink's default path separates them.
	if p := cfg.Sinks()[0].File.Path; p != file.TenantsPath {
		t.Errorf("file sink path %q, want %q", p, file.TenantsPath)
	}
}

// A ClickHouse sink takes tenants: its tables keep them apart by the
// tenant column, first in the sorting key (the sink's tests).
func TestTenantsWithClickHouseLoad(t *testing.T) {
	t.Parallel()
	yaml, env := threeTenants(t)
	cfg, err := Load(writeFile(t, yaml+"sink: {type: clickhouse}\n"), env)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if got := cfg.Sinks()[0].Type; got != SinkClickHouse {
		t.Errorf("sink %q", got)
	}
}

// Every mistake of an entry is named by its index (tenants[3].api.key_id),
// all in one pass; two forms at once, a bad, repeated or reserved name, a
// secret written in the file and a file path without {tenant} are refused.
func TestTenantErrorsNameTheirEntry(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, yaml string
		env        []string
		want       []string
	}{
		{"key_id", `tenants:
  - {name: a, api: {base_url: http://127.0.0.1:1, key_id: k}}
  - {name: b, api: {base_url: http://127.0.0.1:1, key_id: k}}
  - {name: c, api: {base_url: http://127.0.0.1:1, key_id: k}}
  - {name: d, api: {base_url: http://127.0.0.1:1}}
`, []string{"COLLECTOR_TENANTS__0__API__SECRET=s", "COLLECTOR_TENANTS__1__API__SECRET=s", "COLLECTOR_TENANTS__2__API__SECRET=s", "COLLECTOR_TENANTS__3__API__SECRET=s"},
			[]string{"tenants[3].api.key_id: must be set"}},
		{"names", `tenants:
  - {name: "a b", api: {base_url: http://127.0.0.1:1, key_id: k, secret_file: /x}}
  - {name: twin, api: {base_url: http://127.0.0.1:1, key_id: k, secret_file: /x}}
  - {name: twin, api: {base_url: http://127.0.0.1:1, key_id: k, secret_file: /x}}
  - {name: default, api: {base_url: http://127.0.0.1:1, key_id: k, secret_file: /x}}
  - {api: {base_url: http://127.0.0.1:1, key_id: k, secret_file: /x}}
`, nil, []string{`tenants[0].name: "a b": use 1 to 64`, `tenants[2].name: "twin" is the name of tenants[1] too`,
			`tenants[3].name: "default" is the name of the one-tenant form`, "tenants[4].name: must be set"}},
		{"both forms", "api: {key_id: k}\naccounts: [x]\ntenants:\n  - {name: a, api: {base_url: http://127.0.0.1:1, key_id: k, secret_file: /x}}\n",
			nil, []string{"tenants: set together with the one-tenant form (api, accounts)"}},
		{"both forms by the environment", "tenants:\n  - {name: a, api: {base_url: http://127.0.0.1:1, key_id: k, secret_file: /x}}\n",
			[]string{"COLLECTOR_API__SECRET=s"}, []string{"tenants: set together with the one-tenant form (api)"}},
		{"unknown key", "tenants:\n  - {name: a, api: {base_url: http://127.0.0.1:1, key_id: k, secret_file: /x}, acounts: [x]}\n",
			nil, []string{`tenants[0].acounts: unknown key (did you mean "accounts"?)`}},
		{"wrong type", "tenants:\n  - {name: a, api: {base_url: http://127.0.0.1:1, key_id: k, secret_file: /x}}\n  - {name: b, api: {base_url: http://127.0.0.1:1, key_id: k, secret_file: /x, rate: {limit: many}}}\n",
			nil, []string{`tenants[1].api.rate.limit: is not a valid int (invalid syntax), got "many"`}},
		{"literal secret", "tenants:\n  - {name: a, api: {base_url: http://127.0.0.1:1, key_id: k, secret: hunter2-literal}, edge: {base_url: http://127.0.0.1:1/edge, token: tok-literal}}\n",
			nil, []string{"tenants[0].api.secret: a tenant's secret is not written in the file: use secret_file, ${file:PATH}, ${NAME} or COLLECTOR_TENANTS__0__API__SECRET",
				"tenants[0].edge.token: a tenant's secret is not written in the file"}},
		{"environment past the list", "tenants:\n  - {name: a, api: {base_url: http://127.0.0.1:1, key_id: k, secret_file: /x}}\n",
			[]string{"COLLECTOR_TENANTS__4__API__SECRET=s"}, []string{"tenants[4]: COLLECTOR_TENANTS__4__API__SECRET names entry 4, but tenants has 1 entries"}},
		{"a mapping", "tenants: {name: a}\n", nil, []string{"tenants: must be a list of tenants"}},
		{"file path", "tenants:\n  - {name: a, api: {base_url: http://127.0.0.1:1, key_id: k, secret_file: /x}}\nsink: {file: {path: \"{source}/{account}/{yyyy}\"}}\n",
			nil, []string{`sink.file.path: "{source}/{account}/{yyyy}" has no {tenant} component`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := LoadWith(writeFile(t, c.yaml), c.env, LoadOptions{Offline: true})
			if err == nil {
				t.Fatalf("no error, want %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			for _, secret := range []string{"hunter2-literal", "tok-literal"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error shows a secret: %v", err)
				}
			}
		})
	}
}

// A printed configuration of tenants shows no secret, wherever it came
// from, and the one-tenant form prints no tenants key at all.
func TestDumpOfTenantsShowsNoSecret(t *testing.T) {
	t.Parallel()
	yaml, env := threeTenants(t)
	cfg, err := Load(writeFile(t, yaml), env)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cfg.Dump()
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"env-secret-b", "env-token-b", "ref-secret-c", "file-secret"} {
		if strings.Contains(string(out), secret) {
			t.Errorf("the dump shows %q:\n%s", secret, out)
		}
	}
	if !strings.Contains(string(out), "name: beta_2") {
		t.Errorf("the dump lacks the tenants:\n%s", out)
	}
	one, err := Load(writeFile(t, validBase), []string{"COLLECTOR_API__SECRET=s"})
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := one.Dump(); strings.Contains(string(out), "tenants") {
		t.Errorf("the one-tenant form prints tenants:\n%s", out)
	}
}
