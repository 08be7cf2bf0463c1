package config

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/file"
	"github.com/svcexport/collector/internal/source/catalog"
)

// The tenants of a configuration (key "tenants", docs/tenants.md): many
// platform tenants, each with its own API key and edge token, collected
// by one process. Each entry is its own world: its own api and edge
// sections (built-in defaults, not the top-level ones), accounts,
// org_audit_logs, and overrides of the top-level sources. The top-level
// api, edge, accounts and org_audit_logs are the one-tenant form (tenant
// record.DefaultTenant, "" in the data); the two forms are not mixed.
// Errors name the entry by index: "tenants[3].api.key_id".

// tenantNameRe is what a tenant name may be: it is a metric label value,
// a path component, a Kafka topic part and the prefix of its checkpoint
// keys (never "/", which ends that prefix).
var tenantNameRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// TenantConfig is one entry of "tenants".
type TenantConfig struct {
	// Name names the tenant in the data (the envelope's tenant, {tenant}
	// in paths and topics), metrics (label tenant), /state and the
	// checkpoint: letters, digits, - and _, unique, not "default".
	Name string `koanf:"name"`
	// API is the tenant's core API section, with the keys and defaults
	// of the top-level api. Its secret comes from api.secret_file, a
	// ${NAME} or ${file:PATH} reference, or the environment
	// (COLLECTOR_TENANTS__<i>__API__SECRET), never from the file itself.
	API api.Config `koanf:"api"`
	// Edge is the tenant's edge section, as the top-level edge; its token
	// comes from a file or the environment as API's secret does.
	Edge catalog.EdgeConfig `koanf:"edge"`
	// Accounts and OrgAuditLogs are the tenant's, as the top-level keys.
	Accounts     []string `koanf:"accounts"`
	OrgAuditLogs bool     `koanf:"org_audit_logs"`
	// Sources override the top-level sources for this tenant, block by
	// block and key by key (a key the tenant's block leaves unset is the
	// top-level block's).
	Sources catalog.SourcesConfig `koanf:"sources"`

	decodeErr error // what UnmarshalMapstructure found, keys relative to the entry
}

// TenantList is the list of tenants (key "tenants").
type TenantList []TenantConfig

// DefaultTenant returns the defaults of one entry of "tenants": the
// built-in api and edge sections.
func DefaultTenant() TenantConfig {
	d := catalog.DefaultConfig()
	return TenantConfig{API: d.API, Edge: d.Edge}
}

// plainTenant is TenantConfig without its UnmarshalMapstructure.
type plainTenant TenantConfig

// UnmarshalMapstructure decodes the list, each entry over DefaultTenant
// with the loader's rules (unknown keys and values of the wrong type are
// errors naming the key, kept for Validate). Anything but a list is an
// error.
func (l *TenantList) UnmarshalMapstructure(in any) error {
	items, ok := in.([]any)
	if !ok {
		return fmt.Errorf("must be a list of tenants (- {name: NAME, api: {...}, edge: {...}, accounts: [...]}), not %s", kindOf(in))
	}
	out := make(TenantList, len(items))
	for i, item := range items {
		d := DefaultTenant()
		m, ok := item.(map[string]any)
		if !ok {
			d.decodeErr = &KeyError{Msg: fmt.Sprintf("must be a mapping of name, api, edge, accounts, org_audit_logs and sources, not %s", kindOf(item))}
			out[i] = d
			continue
		}
		errs := decodeChecked(m, reflect.TypeOf(TenantConfig{}), (*plainTenant)(&d))
		d.decodeErr = errors.Join(errs...)
		out[i] = d
	}
	*l = out
	return nil
}

// tenantKey is the key path of the i-th entry of "tenants".
func tenantKey(i int) string { return fmt.Sprintf("tenants[%d]", i) }

// oneTenantKeys are the top-level keys of the one-tenant form, which
// "tenants" replaces.
var oneTenantKeys = []string{"api", "edge", "accounts", "org_audit_logs"}

// bothForms refuses tenants together with any key of the one-tenant form
// the file or the environment set (top: the top-level keys set).
func bothForms(top map[string]bool) []error {
	var set []string
	for _, k := range oneTenantKeys {
		if top[k] {
			set = append(set, k)
		}
	}
	if len(set) == 0 {
		return nil
	}
	return []error{&KeyError{Key: "tenants", Msg: fmt.Sprintf("set together with the one-tenant form (%s): give every tenant its own api, edge and accounts under tenants, or use the top-level keys alone",
		strings.Join(set, ", "))}}
}

// validateTenants checks every entry of "tenants", each under its key
// path: its decoding and name (validateSource checks its api, edge and
// sources; LoadWith that the one-tenant form is not set too).
func (c Config) validateTenants() []error {
	if len(c.Tenants) == 0 {
		return nil
	}
	var errs []error
	if c.Simulator.Enabled {
		errs = append(errs, &KeyError{Key: "tenants", Msg: "set together with simulator.enabled: the in-process simulator serves the one-tenant form; give each tenant its simulator's api.base_url instead"})
	}
	names := map[string]string{}
	for i, t := range c.Tenants {
		key := tenantKey(i)
		if t.decodeErr != nil {
			errs = append(errs, entryErrors(key, t.decodeErr)...)
			continue
		}
		switch {
		case t.Name == "":
			errs = append(errs, &KeyError{Key: key + ".name", Msg: "must be set"})
		case !tenantNameRe.MatchString(t.Name):
			errs = append(errs, &KeyError{Key: key + ".name", Msg: fmt.Sprintf("%q: use 1 to 64 of letters, digits, - and _", t.Name)})
		case t.Name == record.DefaultTenant:
			errs = append(errs, &KeyError{Key: key + ".name", Msg: fmt.Sprintf("%q is the name of the one-tenant form (the top-level api): give the tenant another", t.Name)})
		default:
			if first, dup := names[t.Name]; dup {
				errs = append(errs, &KeyError{Key: key + ".name", Msg: fmt.Sprintf("%q is the name of %s too: give each tenant a name of its own", t.Name, first)})
			} else {
				names[t.Name] = key
			}
		}
	}
	return errs
}

// tenantSourceConfig is the part of the configuration the pollers of
// tenant t use: its own sections, with the top-level sources under its
// overrides.
func (c Config) tenantSourceConfig(t TenantConfig) catalog.Config {
	return catalog.Config{Tenant: t.Name, API: t.API, Accounts: t.Accounts, OrgAuditLogs: t.OrgAuditLogs, Edge: t.Edge,
		Sources: mergeSources(c.Sources, t.Sources)}
}

// SourceConfigs returns the part of the configuration the pollers use,
// one per tenant in the order of "tenants", or SourceConfig alone for
// the one-tenant form; none for a shard that owns no tenant
// (OwnsNoTenant).
func (c Config) SourceConfigs() []catalog.Config {
	if c.OwnsNoTenant() {
		return nil
	}
	if len(c.Tenants) == 0 {
		return []catalog.Config{c.SourceConfig()}
	}
	out := make([]catalog.Config, len(c.Tenants))
	for i, t := range c.Tenants {
		out[i] = c.tenantSourceConfig(t)
	}
	return out
}

// PlannedSourceConfigs is SourceConfigs for what needs the streams but
// no running API (see PlannedSourceConfig).
func (c Config) PlannedSourceConfigs() []catalog.Config {
	if len(c.Tenants) == 0 && !c.OwnsNoTenant() {
		return []catalog.Config{c.PlannedSourceConfig()}
	}
	return c.SourceConfigs()
}

// mergeSources returns top with the blocks of over laid over it, key by
// key: a key a block of over sets wins over the same block's in top.
func mergeSources(top, over catalog.SourcesConfig) catalog.SourcesConfig {
	out := make(catalog.SourcesConfig, len(top)+len(over))
	for k, v := range top {
		out[k] = v
	}
	for k, o := range over {
		b := out[k]
		bv, ov := reflect.ValueOf(&b).Elem(), reflect.ValueOf(o)
		for i := 0; i < ov.NumField(); i++ {
			if f := ov.Field(i); !f.IsZero() {
				bv.Field(i).Set(f)
			}
		}
		out[k] = b
	}
	return out
}

// validateTenantSource validates tenant i's pollers' part, with every
// error's key under the entry ("tenants[3].api.key_id").
func (c Config) validateTenantSource(i int) []error {
	if c.Tenants[i].decodeErr != nil {
		return nil // the entry's own problems are reported (validateTenants)
	}
	err := c.tenantSourceConfig(c.Tenants[i]).Validate()
	var out []error
	for _, e := range Problems(err) {
		ke := asKeyError(e)
		switch {
		case ke.Key == "":
			out = append(out, &KeyError{Key: tenantKey(i), Msg: ke.Msg})
		default:
			out = append(out, &KeyError{Key: tenantKey(i) + "." + ke.Key, Msg: ke.Msg})
		}
	}
	return out
}

// tenantEnv splits COLLECTOR_TENANTS__<i>__REST=value into i and the
// dotted key under the entry (api.secret); ok is false for any other
// variable.
func tenantEnv(name string) (i int, key string, ok bool) {
	rest, found := strings.CutPrefix(name, EnvPrefix+"TENANTS__")
	if !found {
		return 0, "", false
	}
	idx, sub, found := strings.Cut(rest, "__")
	if !found || sub == "" {
		return 0, "", false
	}
	n, err := strconv.Atoi(idx)
	if err != nil || n < 0 || n > 100000 {
		return 0, "", false
	}
	return n, envKey(EnvPrefix + sub), true
}

// applyTenantEnv sets, in the file's tenants list m["tenants"], the keys
// the environment gives an entry (COLLECTOR_TENANTS__0__API__SECRET sets
// tenants[0].api.secret): koanf would otherwise replace the whole list
// with a map. An index past the list is a problem naming the variable.
func applyTenantEnv(m map[string]any, environ []string) []error {
	var errs []error
	for _, kv := range environ {
		name, v, _ := strings.Cut(kv, "=")
		i, key, ok := tenantEnv(name)
		if !ok {
			continue
		}
		list, _ := m["tenants"].([]any)
		if i >= len(list) {
			errs = append(errs, &KeyError{Key: tenantKey(i), Msg: fmt.Sprintf("%s names entry %d, but tenants has %d entries", name, i, len(list))})
			continue
		}
		entry, _ := list[i].(map[string]any)
		if entry == nil {
			entry = map[string]any{}
			list[i] = entry
		}
		parts := strings.Split(key, ".")
		at := entry
		for _, p := range parts[:len(parts)-1] {
			next, _ := at[p].(map[string]any)
			if next == nil {
				next = map[string]any{}
				at[p] = next
			}
			at = next
		}
		at[parts[len(parts)-1]] = v
	}
	return errs
}

// literalTenantSecrets reports every secret an entry of the file's
// "tenants" holds as literal text (not a ${...} reference): a tenant's
// secrets come from files or the environment, so that a configuration of
// many tenants can be shared and versioned without any of them.
func literalTenantSecrets(m map[string]any) []error {
	list, _ := m["tenants"].([]any)
	tags := secretTags()
	var errs []error
	for i, item := range list {
		entry, _ := item.(map[string]any)
		for _, sec := range []string{"api", "edge"} {
			block, _ := entry[sec].(map[string]any)
			for k, v := range block {
				s, isString := v.(string)
				if !tags[k] || !isString || s == "" || strings.Contains(s, "${") {
					continue
				}
				key := fmt.Sprintf("%s.%s.%s", tenantKey(i), sec, k)
				env := fmt.Sprintf("%sTENANTS__%d__%s__%s", EnvPrefix, i, strings.ToUpper(sec), strings.ToUpper(k))
				errs = append(errs, &KeyError{Key: key, Msg: fmt.Sprintf("a tenant's secret is not written in the file: use %s_file, ${file:PATH}, ${NAME} or %s", k, env)})
			}
		}
	}
	return errs
}

// tenantPaths gives every file sink of a configuration with tenants that
// keeps the default path the tenants' one (file.TenantsPath): two
// tenants' streams of one source and account must not share a directory.
func tenantPaths(cfg *Config) {
	if cfg.Sink.File.Path == file.DefaultPath {
		cfg.Sink.File.Path = file.TenantsPath
	}
	for i := range cfg.SinkList {
		if cfg.SinkList[i].File.Path == file.DefaultPath {
			cfg.SinkList[i].File.Path = file.TenantsPath
		}
	}
}

// tenantSinkErrors refuses, with tenants, a file sink whose path has no
// {tenant} component: two tenants' files would share a directory. A
// ClickHouse sink keeps tenants apart by its tenant column, first in the
// sorting key (issue 32).
func (c Config) tenantSinkErrors(s SinkConfig) []error {
	if len(c.Tenants) == 0 {
		return nil
	}
	if s.Type == SinkFile && !strings.Contains(s.File.Path, "{tenant}") {
		return []error{&KeyError{Key: s.Key() + ".file.path", Msg: fmt.Sprintf("%q has no {tenant} component: with tenants, each tenant's files need a directory of their own (e.g. %s)", s.File.Path, file.TenantsPath)}}
	}
	return nil
}
