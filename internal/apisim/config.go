package apisim

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Roles of an API key (seed, "Authentication": role rules).
const (
	// RoleOrgAdmin may read every account and organization-level data.
	RoleOrgAdmin = "org_admin"
	// RoleAccountAdmin may read its own account(s) but no organization-level data.
	RoleAccountAdmin = "account_admin"
	// RoleAccountUser gets no token at all (403, CONTRACT C1).
	RoleAccountUser = "account_user"
)

// OrgAccount is the account name of organization-level audit logs in the
// ground truth (CONTRACT C7).
const OrgAccount = "org"

// KeyConfig is one API access key the token endpoint accepts (CONTRACT C1).
type KeyConfig struct {
	// KeyID is the keyId sent in the token request body.
	KeyID string `yaml:"key_id"`
	// Secret is the value expected in the secret header (X-SVC-UAKS).
	Secret string `yaml:"secret"`
	// User owns the key; rate buckets are per user (C4).
	User string `yaml:"user"`
	// Role is org_admin, account_admin or account_user.
	Role string `yaml:"role"`
	// Account is the home account, used when a request names none (C2).
	Account string `yaml:"account"`
	// AllowedAccounts, when not empty, limits the accounts the key may
	// read, whatever its role: any other account answers 403 (a key with
	// permissions narrower than its role, C2, C5). Empty: the role decides.
	AllowedAccounts []string `yaml:"allowed_accounts"`
	// NoOrgAccess refuses organization-level data (Org-Access: true) to
	// the key with 403, even to an org admin. Default false: the role
	// decides.
	NoOrgAccess bool `yaml:"no_org_access"`
}

// Config holds every knob of the simulator. Start from DefaultConfig: its
// values are the seed's and the contract's. For the limits below, 0 switches
// the limit off unless the field says otherwise.
type Config struct {
	// Seed makes the data and the faults deterministic.
	Seed int64 `yaml:"seed"`
	// Accounts are the sub-accounts of the organization (C2). The edge API
	// serves the edge records of all of them at once (C6 has no account
	// selection); each record names its account in account_name.
	Accounts []string `yaml:"accounts"`
	// Keys are the API keys the token endpoint accepts.
	Keys []KeyConfig `yaml:"keys"`
	// SecretHeader names the header carrying a key's secret (C1).
	SecretHeader string `yaml:"secret_header"`
	// TokenDefaultExpiry is a token's life when the request names none (C1).
	TokenDefaultExpiry time.Duration `yaml:"token_default_expiry"`
	// TokenMaxExpiry is the largest expiryTime accepted; larger is 400 (C1).
	TokenMaxExpiry time.Duration `yaml:"token_max_expiry"`
	// EdgeToken is the bearer token the edge API accepts (C6).
	EdgeToken string `yaml:"edge_token"`

	// Rates are rows per hour per source name (C3, C6), before the daily
	// wave and bursts.
	Rates map[string]float64 `yaml:"rates"`
	// AccountRates override Rates per account name, then per source name.
	// The organization-level audit logs are account "org".
	AccountRates map[string]map[string]float64 `yaml:"account_rates"`
	// WaveAmplitude is the relative amplitude of the daily wave, in [0, 1).
	WaveAmplitude float64 `yaml:"wave_amplitude"`
	// BurstProbability is the chance that an hour of a stream is a burst.
	BurstProbability float64 `yaml:"burst_probability"`
	// BurstFactor multiplies the rate of a burst hour.
	BurstFactor float64 `yaml:"burst_factor"`

	// PageSize is the rows per page (C3); must be positive.
	PageSize int `yaml:"page_size"`
	// ResultCap ends a next-page chain after this many rows although
	// totalRows may be larger (C3).
	ResultCap int `yaml:"result_cap"`
	// TotalRowsCap caps the totalRows a first page reports (C3: the
	// service may cap the count): a result set larger than this says
	// totalRows = TotalRowsCap, while its chain still goes on to the end or
	// to ResultCap. 0 (the default) reports the true count.
	TotalRowsCap int64 `yaml:"total_rows_cap"`
	// AuditUnpaged makes AuditLogs answer every search without paging,
	// with at most PageSize rows, and drop the rest silently: a server
	// that cuts such answers (C3 promises one page with all rows). Default
	// false: only a result set that fits in one page is answered so.
	AuditUnpaged bool `yaml:"audit_unpaged"`
	// NextPageTTL is how long after a chain's first page its next-page URLs
	// work (C3); later they answer 404.
	NextPageTTL time.Duration `yaml:"next_page_ttl"`
	// DefaultRange is the window of a search without timeFilter (seed: 24 h).
	DefaultRange time.Duration `yaml:"default_range"`
	// FleetAgents is the number of agents of each account's fleet: what
	// an agent_info search without timeFilter answers, each agent in its
	// current state (see Fleet). Default 240; 0 turns the fleet off (such
	// a search then answers its default range like any other).
	FleetAgents int `yaml:"fleet_agents"`
	// FleetChange is how often, on average, a fleet agent's state
	// (status, tags, version, lastUpdate) changes, each agent at its own
	// moments. Default 6h.
	FleetChange time.Duration `yaml:"fleet_change"`
	// MaxRange is the longest search window (C3: 7 days); longer is 400.
	MaxRange time.Duration `yaml:"max_range"`
	// MaxHistory is how far back a search may start (C3: 92 days); earlier is 400.
	MaxHistory time.Duration `yaml:"max_history"`
	// MaxBodyBytes is the largest POST body (C5: 1 MB); larger is 400.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// RateLimit is the size of each (user, functionality) token bucket (C4).
	RateLimit int `yaml:"rate_limit"`
	// RatePeriod is the time in which an empty bucket refills completely.
	RatePeriod time.Duration `yaml:"rate_period"`
	// EdgeMaxRows is the most rows an edge response holds; the rest is
	// dropped silently (C6).
	EdgeMaxRows int `yaml:"edge_max_rows"`
	// AlertUpdateWindow is the time after create_time within which an edge
	// alert receives its 0 to 2 updates (C6).
	AlertUpdateWindow time.Duration `yaml:"alert_update_window"`

	// ErrorRate is the probability that a data request answers 500 or 503.
	ErrorRate float64 `yaml:"error_rate"`
	// NoisyFraction is the fraction of each data bucket's refill rate that
	// another client of the same user spends continuously (C4), in [0, 1).
	NoisyFraction float64 `yaml:"noisy_fraction"`
	// RevokeEvery revokes all tokens of a user at every N-th data request of
	// that user; that request answers 401 (C1).
	RevokeEvery int `yaml:"revoke_every"`
	// SlowRate is the probability that a data response is delayed by SlowDelay.
	SlowRate float64 `yaml:"slow_rate"`
	// SlowDelay is the delay of a slow response.
	SlowDelay time.Duration `yaml:"slow_delay"`
	// CutRate is the probability that a data response body is cut off
	// mid-JSON: the full Content-Length is declared, part is written, then
	// the connection closes (C5).
	CutRate float64 `yaml:"cut_rate"`
	// LateMax is the largest ingestion delay: a record of time t becomes
	// visible at t+d with d deterministic in [0, LateMax] (C3). 0: no late data.
	LateMax time.Duration `yaml:"late_max"`
	// LateShare is the share of records that are late, in (0, 1]; 0
	// means all (each late record's delay is in [0, LateMax]).
	LateShare float64 `yaml:"late_share"`
	// LateMaxAfter, when positive, replaces LateMax for records whose time
	// is at or after LateSwitch: the platform's delays change during a
	// run.
	LateMaxAfter time.Duration `yaml:"late_max_after"`
	LateSwitch   time.Time     `yaml:"late_switch"`
	// LateShareAfter, when positive (and LateMaxAfter is), replaces
	// LateShare for the records at or after LateSwitch: few records late
	// by hours, then many late by minutes.
	LateShareAfter float64 `yaml:"late_share_after"`

	// Now is the clock; nil means time.Now. Tests inject a manual clock.
	Now func() time.Time `yaml:"-"`
}

// DefaultConfig returns the production-shaped defaults: the seed's and the
// contract's limits, three keys (sim-key/sim-secret org admin "sim-admin"
// of account acme; sim-acct-key/sim-acct-secret account admin
// "sim-acct-admin" of acme-dev; sim-user-key/sim-user-secret account user
// "sim-user"), sub-accounts acme and acme-dev, and no faults.
func DefaultConfig() Config {
	return Config{
		Seed:     1,
		Accounts: []string{"acme", "acme-dev"},
		Keys: []KeyConfig{
			{KeyID: "sim-key", Secret: "sim-secret", User: "sim-admin", Role: RoleOrgAdmin, Account: "acme"},
			{KeyID: "sim-acct-key", Secret: "sim-acct-secret", User: "sim-acct-admin", Role: RoleAccountAdmin, Account: "acme-dev"},
			{KeyID: "sim-user-key", Secret: "sim-user-secret", User: "sim-user", Role: RoleAccountUser, Account: "acme"},
		},
		SecretHeader:       "X-SVC-UAKS",
		TokenDefaultExpiry: time.Hour,
		TokenMaxExpiry:     24 * time.Hour,
		EdgeToken:          "sim-edge-token",
		Rates: map[string]float64{
			SourceChangedFiles:    20000,
			SourceConnections:     30000,
			SourceDNS:             15000,
			SourceUserLogins:      2000,
			SourceAgentInfo:       500,
			SourceAuditLogs:       200,
			SourceCloudActivities: 10000,
			SourceEdgeAuditEvents: 1000,
			SourceEdgeAlerts:      100,
		},
		WaveAmplitude:     0.3,
		BurstProbability:  0.02,
		BurstFactor:       5,
		PageSize:          5000,
		ResultCap:         500000,
		NextPageTTL:       24 * time.Hour,
		DefaultRange:      24 * time.Hour,
		FleetAgents:       240,
		FleetChange:       6 * time.Hour,
		MaxRange:          7 * 24 * time.Hour,
		MaxHistory:        92 * 24 * time.Hour,
		MaxBodyBytes:      1 << 20,
		RateLimit:         480,
		RatePeriod:        time.Hour,
		EdgeMaxRows:       10000,
		AlertUpdateWindow: 6 * time.Hour,
		SlowDelay:         2 * time.Second,
	}
}

// Validate reports every invalid field, naming its yaml key.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("apisim.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if len(c.Accounts) == 0 {
		bad("accounts", "at least one account is needed")
	}
	seen := map[string]bool{}
	for _, a := range c.Accounts {
		switch {
		case a == "" || strings.TrimSpace(a) != a:
			bad("accounts", "account name %q is empty or padded", a)
		case strings.EqualFold(a, OrgAccount):
			bad("accounts", "account name %q is reserved for organization-level data", a)
		case seen[strings.ToLower(a)]:
			bad("accounts", "account %q is listed twice (names are case-insensitive)", a)
		}
		seen[strings.ToLower(a)] = true
	}
	keyIDs := map[string]bool{}
	for i, k := range c.Keys {
		key := fmt.Sprintf("keys[%d]", i)
		if k.KeyID == "" || k.Secret == "" || k.User == "" {
			bad(key, "key_id, secret and user are required")
		}
		if keyIDs[k.KeyID] {
			bad(key, "key_id %q is listed twice", k.KeyID)
		}
		keyIDs[k.KeyID] = true
		switch k.Role {
		case RoleOrgAdmin, RoleAccountAdmin, RoleAccountUser:
		default:
			bad(key+".role", "unknown role %q (want org_admin, account_admin or account_user)", k.Role)
		}
		if !seen[strings.ToLower(k.Account)] {
			bad(key+".account", "account %q is not in accounts", k.Account)
		}
		if k.User == edgeUser {
			bad(key+".user", "user %q is reserved for the edge API's bucket", k.User)
		}
		for _, a := range k.AllowedAccounts {
			if !seen[strings.ToLower(a)] {
				bad(key+".allowed_accounts", "account %q is not in accounts", a)
			}
		}
	}
	if c.SecretHeader == "" {
		bad("secret_header", "must not be empty")
	}
	if c.TokenDefaultExpiry < time.Second || c.TokenMaxExpiry < c.TokenDefaultExpiry {
		bad("token_default_expiry", "must be at least 1s and at most token_max_expiry")
	}
	if c.EdgeToken == "" {
		bad("edge_token", "must not be empty")
	}
	for _, name := range sortedKeys(c.Rates) {
		r := c.Rates[name]
		if _, ok := sourceByName(name); !ok {
			bad("rates", "unknown source %q", name)
		}
		if r < 0 {
			bad("rates."+name, "must not be negative")
		}
	}
	for _, acct := range sortedKeys(c.AccountRates) {
		m := c.AccountRates[acct]
		if !seen[strings.ToLower(acct)] && acct != OrgAccount {
			bad("account_rates", "unknown account %q", acct)
		}
		for _, name := range sortedKeys(m) {
			r := m[name]
			if _, ok := sourceByName(name); !ok {
				bad("account_rates."+acct, "unknown source %q", name)
			}
			if r < 0 {
				bad("account_rates."+acct+"."+name, "must not be negative")
			}
		}
	}
	if c.WaveAmplitude < 0 || c.WaveAmplitude >= 1 {
		bad("wave_amplitude", "must be in [0, 1)")
	}
	if c.BurstProbability < 0 || c.BurstProbability > 1 {
		bad("burst_probability", "must be in [0, 1]")
	}
	if c.BurstFactor < 0 {
		bad("burst_factor", "must not be negative")
	}
	if c.PageSize <= 0 {
		bad("page_size", "must be positive")
	}
	if c.ResultCap < 0 || (c.ResultCap > 0 && c.ResultCap < c.PageSize) {
		bad("result_cap", "must be 0 (off) or at least page_size")
	}
	if c.TotalRowsCap < 0 {
		bad("total_rows_cap", "must not be negative (0 is off)")
	}
	if c.DefaultRange <= 0 {
		bad("default_range", "must be positive")
	}
	if c.FleetAgents < 0 || c.FleetAgents > 1_000_000 {
		bad("fleet_agents", "must be between 0 and 1000000")
	}
	if c.FleetAgents > 0 && c.FleetChange <= 0 {
		bad("fleet_change", "must be positive while fleet_agents is set")
	}
	for _, d := range []struct {
		key string
		d   time.Duration
	}{
		{"next_page_ttl", c.NextPageTTL}, {"max_range", c.MaxRange}, {"max_history", c.MaxHistory},
		{"rate_period", c.RatePeriod}, {"alert_update_window", c.AlertUpdateWindow},
		{"slow_delay", c.SlowDelay}, {"late_max", c.LateMax}, {"late_max_after", c.LateMaxAfter},
	} {
		if d.d < 0 {
			bad(d.key, "must not be negative")
		}
	}
	if c.RateLimit < 0 {
		bad("rate_limit", "must not be negative")
	}
	if c.RateLimit > 0 && c.RatePeriod <= 0 {
		bad("rate_period", "must be positive when rate_limit is on")
	}
	if c.MaxBodyBytes < 0 {
		bad("max_body_bytes", "must not be negative")
	}
	if c.EdgeMaxRows < 0 {
		bad("edge_max_rows", "must not be negative")
	}
	for _, p := range []struct {
		key string
		p   float64
	}{{"error_rate", c.ErrorRate}, {"slow_rate", c.SlowRate}, {"cut_rate", c.CutRate}, {"late_share", c.LateShare},
		{"late_share_after", c.LateShareAfter}} {
		if p.p < 0 || p.p > 1 {
			bad(p.key, "must be a probability in [0, 1]")
		}
	}
	if c.NoisyFraction < 0 || c.NoisyFraction >= 1 {
		bad("noisy_fraction", "must be in [0, 1)")
	}
	if c.RevokeEvery < 0 {
		bad("revoke_every", "must not be negative")
	}
	return errors.Join(errs...)
}

// rate returns the configured rows per hour of source for account (account
// names are case-insensitive).
func (c *Config) rate(source, account string) float64 {
	for a, m := range c.AccountRates {
		if !strings.EqualFold(a, account) {
			continue
		}
		if r, ok := m[source]; ok {
			return r
		}
	}
	return c.Rates[source]
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
