package source

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/window"
)

// Day is 24 hours; the API states its limits in days (CONTRACT C3).
const Day = 24 * time.Hour

// MaxWindowLimit is the longest window the core API accepts (C3: 7 days).
const MaxWindowLimit = 7 * Day

// MaxTokenTTL is the longest bearer token life the API grants (seed: 86400 s).
const MaxTokenTTL = 24 * time.Hour

// Config is the configuration this package owns. The top-level loader puts
// its parts under the keys api, accounts, org_audit_logs, edge and sources.
type Config struct {
	// API is the core API (CONTRACT C1-C5).
	API APIConfig `koanf:"api"`
	// Accounts are the sub-accounts to read (C2). Empty means the token's own
	// account: no Account-Name header, envelope account "default".
	Accounts []string `koanf:"accounts"`
	// OrgAuditLogs also pulls organization-level audit logs with
	// Org-Access: true, envelope account "org" (C2). Default false.
	OrgAuditLogs bool `koanf:"org_audit_logs"`
	// Edge is the edge API (C6); off while Edge.BaseURL is empty.
	Edge EdgeConfig `koanf:"edge"`
	// Sources holds a "default" block and per-source overrides.
	Sources SourcesConfig `koanf:"sources"`
}

// RateConfig describes one token bucket of the API (CONTRACT C4).
type RateConfig struct {
	// Limit is tokens per period (and the bucket size). Default 480.
	Limit int `koanf:"limit"`
	// Period is the refill period. Default 1h.
	Period time.Duration `koanf:"period"`
	// Reserve is the fraction of the bucket left to other clients of the
	// same user. Default 0.1.
	Reserve float64 `koanf:"reserve"`
}

// RetryConfig is the backoff for transient errors (C5).
type RetryConfig struct {
	// Initial is the first backoff. Default 1s.
	Initial time.Duration `koanf:"initial"`
	// Max caps one backoff. Default 2m.
	Max time.Duration `koanf:"max"`
	// MaxAttempts bounds the attempts of one request for transient errors;
	// 0 (the default) is unlimited.
	MaxAttempts int `koanf:"max_attempts"`
}

// APIConfig configures the core API client.
type APIConfig struct {
	BaseURL string `koanf:"base_url"`
	KeyID   string `koanf:"key_id"`
	// Secret is the key's secret, usually from the environment. Secret wins
	// over SecretFile.
	Secret     secret.Secret `koanf:"secret"`
	SecretFile string        `koanf:"secret_file"`
	// SecretHeader names the header carrying the secret (C1). Default
	// "X-SVC-UAKS".
	SecretHeader string `koanf:"secret_header"`
	// TokenTTL is the bearer token life asked for. Default 1h, at most 24h.
	TokenTTL time.Duration `koanf:"token_ttl"`
	// Timeout bounds one request, body included. Default 125s.
	Timeout time.Duration `koanf:"timeout"`
	// User names the budget group: credentials of one user share buckets
	// (C4). Default: the key id.
	User string     `koanf:"user"`
	Rate RateConfig `koanf:"rate"`
	// MaxHistory is how far back searches reach (C3). Default 92 days.
	MaxHistory time.Duration `koanf:"max_history"`
	// PageRows is rows per full page (C3). Default 5000.
	PageRows int `koanf:"page_rows"`
	// ResultCap is rows in all pages of one result set (C3). Default 500000.
	ResultCap int64 `koanf:"result_cap"`
	// NextPageTTL is how long a next-page URL stays valid (C3). Default 24h.
	NextPageTTL time.Duration `koanf:"next_page_ttl"`
	// MaxPages caps the pages walked per result set (C3). Default 100.
	MaxPages int `koanf:"max_pages"`
	// MaxBodyBytes bounds one response body. Default 64 MiB. A page over
	// it is not an error of the window: the poller splits the window and
	// asks the halves; only a window that cannot be split further fails
	// (poll error kind "body_too_large").
	MaxBodyBytes int64       `koanf:"max_body_bytes"`
	Retry        RetryConfig `koanf:"retry"`
	// AllowedOrigins lists the origins, besides base_url's, that may
	// receive the bearer token and the account headers: next-page URLs
	// (C3) and redirects to them are followed. Each entry is
	// "scheme://host[:port]" (http or https; host case and default ports
	// do not matter). Default empty: a next-page URL or a redirect to any
	// other origin, and any redirect from https to http, is refused before
	// a request is sent (poll error kind "origin"). Only for a service that
	// really pages across hosts.
	AllowedOrigins []string `koanf:"allowed_origins"`
}

// EdgeConfig configures the edge API client (CONTRACT C6).
type EdgeConfig struct {
	// BaseURL of the edge API; empty turns the edge sources off.
	BaseURL string `koanf:"base_url"`
	// Token is the edge bearer token; it wins over TokenFile.
	Token     secret.Secret `koanf:"token"`
	TokenFile string        `koanf:"token_file"`
	// MaxRows is the most rows the edge API returns; a response that full is
	// taken as truncated. Default 10000.
	MaxRows int `koanf:"max_rows"`
	// AlertStatusFilter is sent as status_filter. Default
	// "OPEN,IN_PROGRESS,CLOSED".
	AlertStatusFilter string `koanf:"alert_status_filter"`
	// AlertUpdateLookback is the trailing period re-asked for alert
	// updates. Default 24h; 0 turns the re-ask off.
	AlertUpdateLookback time.Duration `koanf:"alert_update_lookback"`
	// Timeout bounds one request. Default 125s.
	Timeout time.Duration `koanf:"timeout"`
	// Rate is the edge bucket; limits are unpublished, default 480/1h.
	Rate RateConfig `koanf:"rate"`
	// Accounts are sent as Account-Name; nil means the top-level accounts.
	Accounts []string `koanf:"accounts"`
	// AllowedOrigins lists the origins, besides base_url's, that may
	// receive the edge token, as api.allowed_origins does for the core
	// API. Default empty: redirects to another origin, and from https to
	// http, are refused.
	AllowedOrigins []string `koanf:"allowed_origins"`
}

// Filter is one search filter passed verbatim to the search body (C3).
type Filter struct {
	Expression string   `koanf:"expression" json:"expression"`
	Field      string   `koanf:"field" json:"field"`
	Value      string   `koanf:"value" json:"value,omitempty"`
	Values     []string `koanf:"values" json:"values,omitempty"`
}

// SourceOverride is the configuration block of one source or of the
// "default" block. Nil fields inherit: a source inherits from "default",
// which inherits from DefaultSource.
type SourceOverride struct {
	Enabled *bool `koanf:"enabled"`
	// Start is where a stream without checkpoint begins: a duration back
	// from now ("48h", "7d") or an RFC 3339 time.
	Start     *string        `koanf:"start"`
	Lag       *time.Duration `koanf:"lag"`
	Interval  *time.Duration `koanf:"interval"`
	MaxWindow *time.Duration `koanf:"max_window"`
	Overlap   *time.Duration `koanf:"overlap"`
	Filters   []Filter       `koanf:"filters"`
	Returns   []string       `koanf:"returns"`
}

// SourcesConfig maps "default" and source names to their blocks.
type SourcesConfig map[string]SourceOverride

// DefaultSourcesKey is the key of the block every source inherits from.
const DefaultSourcesKey = "default"

// SourceSettings is the resolved configuration of one source.
type SourceSettings struct {
	Enabled   bool
	Start     string
	Lag       time.Duration
	Interval  time.Duration
	MaxWindow time.Duration
	Overlap   time.Duration
	Filters   []Filter
	Returns   []string
}

// DefaultSource returns the built-in source settings: enabled, start 24h
// back, lag 30m, interval 5m, max_window 7 days, no overlap.
func DefaultSource() SourceSettings {
	return SourceSettings{
		Enabled:   true,
		Start:     "24h",
		Lag:       30 * time.Minute,
		Interval:  5 * time.Minute,
		MaxWindow: MaxWindowLimit,
	}
}

// DefaultRate returns 480 tokens per hour with 10% reserve (seed, C4).
func DefaultRate() RateConfig { return RateConfig{Limit: 480, Period: time.Hour, Reserve: 0.1} }

// DefaultAPIConfig returns the core API defaults of the seed and contract.
func DefaultAPIConfig() APIConfig {
	return APIConfig{
		SecretHeader: "X-SVC-UAKS",
		TokenTTL:     time.Hour,
		Timeout:      125 * time.Second,
		Rate:         DefaultRate(),
		MaxHistory:   92 * Day,
		PageRows:     5000,
		ResultCap:    500000,
		NextPageTTL:  24 * time.Hour,
		MaxPages:     100,
		MaxBodyBytes: 64 << 20,
		Retry:        RetryConfig{Initial: time.Second, Max: 2 * time.Minute},
	}
}

// DefaultEdgeConfig returns the edge defaults of CONTRACT C6.
func DefaultEdgeConfig() EdgeConfig {
	return EdgeConfig{
		MaxRows:             10000,
		AlertStatusFilter:   "OPEN,IN_PROGRESS,CLOSED",
		AlertUpdateLookback: 24 * time.Hour,
		Timeout:             125 * time.Second,
		Rate:                DefaultRate(),
	}
}

// DefaultConfig returns the whole configuration with its defaults; the
// "default" sources block is filled so a dump shows every default.
func DefaultConfig() Config {
	d := DefaultSource()
	return Config{
		API:  DefaultAPIConfig(),
		Edge: DefaultEdgeConfig(),
		Sources: SourcesConfig{DefaultSourcesKey: {
			Enabled: &d.Enabled, Start: &d.Start, Lag: &d.Lag, Interval: &d.Interval,
			MaxWindow: &d.MaxWindow, Overlap: &d.Overlap,
		}},
	}
}

// Resolve merges the built-in defaults, the "default" block and the block
// of source name, in that order; unset fields inherit.
func (s SourcesConfig) Resolve(name string) SourceSettings {
	r := DefaultSource()
	r.apply(s[DefaultSourcesKey])
	if name != DefaultSourcesKey {
		r.apply(s[name])
	}
	return r
}

func (r *SourceSettings) apply(o SourceOverride) {
	if o.Enabled != nil {
		r.Enabled = *o.Enabled
	}
	if o.Start != nil {
		r.Start = *o.Start
	}
	if o.Lag != nil {
		r.Lag = *o.Lag
	}
	if o.Interval != nil {
		r.Interval = *o.Interval
	}
	if o.MaxWindow != nil {
		r.MaxWindow = *o.MaxWindow
	}
	if o.Overlap != nil {
		r.Overlap = *o.Overlap
	}
	if o.Filters != nil {
		r.Filters = slices.Clone(o.Filters)
	}
	if o.Returns != nil {
		r.Returns = slices.Clone(o.Returns)
	}
}

// StartTime returns where a stream without checkpoint begins at now: Start
// is a duration back ("48h", "7d"), "max", or an RFC 3339 time or a date;
// see window.Planner.Start. It is clamped to the API's default max history.
func (r SourceSettings) StartTime(now time.Time) (time.Time, error) {
	t, _, err := window.Planner{}.Start(r.Start, now)
	return t, err
}

// Validate checks the whole configuration and names each bad key by its full
// path; all problems are joined.
func (c Config) Validate() error {
	var errs []error
	errs = append(errs, c.API.validate("api")...)
	for i, a := range c.Accounts {
		if err := checkAccount(a); err != nil {
			errs = append(errs, fmt.Errorf("accounts[%d]: %w", i, err))
		}
	}
	if c.Edge.BaseURL != "" {
		errs = append(errs, c.Edge.validate("edge")...)
	}
	errs = append(errs, c.Sources.validate("sources")...)
	return errors.Join(errs...)
}

func (c APIConfig) validate(p string) []error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", p, key, fmt.Sprintf(format, args...)))
	}
	if err := checkURL(c.BaseURL); err != nil {
		add("base_url", "%v", err)
	}
	if c.KeyID == "" {
		add("key_id", "must be set")
	}
	if !c.Secret.IsSet() && c.SecretFile == "" {
		add("secret", "must be set (or %s.secret_file)", p)
	}
	if c.SecretHeader == "" {
		add("secret_header", "must be set")
	}
	switch {
	case c.TokenTTL < time.Minute:
		add("token_ttl", "must be at least 1m")
	case c.TokenTTL > MaxTokenTTL:
		add("token_ttl", "must be at most 24h")
	}
	if c.Timeout <= 0 {
		add("timeout", "must be positive")
	}
	errs = append(errs, c.Rate.validate(p+".rate")...)
	if c.MaxHistory <= 0 {
		add("max_history", "must be positive")
	}
	if c.PageRows <= 0 {
		add("page_rows", "must be positive")
	}
	if c.ResultCap <= 0 {
		add("result_cap", "must be positive")
	}
	if c.NextPageTTL <= 0 {
		add("next_page_ttl", "must be positive")
	}
	if c.MaxPages <= 0 {
		add("max_pages", "must be positive")
	}
	if c.MaxBodyBytes < 1024 {
		add("max_body_bytes", "must be at least 1024")
	}
	errs = append(errs, c.Retry.validate(p+".retry")...)
	errs = append(errs, validateOrigins(p+".allowed_origins", c.AllowedOrigins)...)
	return errs
}

func (r RateConfig) validate(p string) []error {
	var errs []error
	if r.Limit <= 0 {
		errs = append(errs, fmt.Errorf("%s.limit: must be positive", p))
	}
	if r.Period <= 0 {
		errs = append(errs, fmt.Errorf("%s.period: must be positive", p))
	}
	if r.Reserve < 0 || r.Reserve >= 1 {
		errs = append(errs, fmt.Errorf("%s.reserve: must be in [0, 1)", p))
	} else if r.Limit > 0 && float64(r.Limit)*(1-r.Reserve) < 1 {
		errs = append(errs, fmt.Errorf("%s.reserve: leaves less than one token of %d", p, r.Limit))
	}
	return errs
}

func (r RetryConfig) validate(p string) []error {
	var errs []error
	if r.Initial <= 0 {
		errs = append(errs, fmt.Errorf("%s.initial: must be positive", p))
	}
	if r.Max < r.Initial {
		errs = append(errs, fmt.Errorf("%s.max: must be at least %s.initial", p, p))
	}
	if r.MaxAttempts < 0 {
		errs = append(errs, fmt.Errorf("%s.max_attempts: must not be negative (0 is unlimited)", p))
	}
	return errs
}

func (c EdgeConfig) validate(p string) []error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", p, key, fmt.Sprintf(format, args...)))
	}
	if err := checkURL(c.BaseURL); err != nil {
		add("base_url", "%v", err)
	}
	if !c.Token.IsSet() && c.TokenFile == "" {
		add("token", "must be set (or %s.token_file) when %s.base_url is set", p, p)
	}
	if c.MaxRows <= 0 {
		add("max_rows", "must be positive")
	}
	if strings.TrimSpace(c.AlertStatusFilter) == "" {
		add("alert_status_filter", "must be set")
	}
	if c.AlertUpdateLookback < 0 {
		add("alert_update_lookback", "must not be negative")
	}
	if c.Timeout <= 0 {
		add("timeout", "must be positive")
	}
	errs = append(errs, c.Rate.validate(p+".rate")...)
	for i, a := range c.Accounts {
		if err := checkAccount(a); err != nil {
			add(fmt.Sprintf("accounts[%d]", i), "%v", err)
		}
	}
	errs = append(errs, validateOrigins(p+".allowed_origins", c.AllowedOrigins)...)
	return errs
}

func (s SourcesConfig) validate(p string) []error {
	var errs []error
	names := make([]string, 0, len(s))
	for name := range s {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if name != DefaultSourcesKey {
			if _, ok := LookupSpec(name); !ok {
				errs = append(errs, fmt.Errorf("%s.%s: unknown source (known: %s)", p, name, strings.Join(SpecNames(), ", ")))
				continue
			}
		}
		errs = append(errs, s.Resolve(name).validate(p+"."+name)...)
	}
	// returns must keep the record time field, or no record could be
	// filed in its window (C3).
	for _, spec := range Specs() {
		r := s.Resolve(spec.Name)
		if len(r.Returns) == 0 || slices.Contains(r.Returns, spec.TimeField) {
			continue
		}
		key := spec.Name
		if s[spec.Name].Returns == nil {
			key = DefaultSourcesKey
		}
		errs = append(errs, fmt.Errorf("%s.%s.returns: must include %s, the record time of %s", p, key, spec.TimeField, spec.Name))
	}
	return errs
}

func (r SourceSettings) validate(p string) []error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", p, key, fmt.Sprintf(format, args...)))
	}
	if _, err := r.StartTime(time.Now()); err != nil {
		add("start", "%v", err)
	}
	if r.Lag < 0 {
		add("lag", "must not be negative")
	}
	if r.Interval <= 0 {
		add("interval", "must be positive")
	}
	switch {
	case r.MaxWindow <= 0:
		add("max_window", "must be positive")
	case r.MaxWindow > MaxWindowLimit:
		add("max_window", "must be at most 7 days (168h), the API's limit")
	}
	if r.Overlap < 0 {
		add("overlap", "must not be negative")
	}
	for i, f := range r.Filters {
		if err := f.validate(); err != nil {
			add(fmt.Sprintf("filters[%d]", i), "%v", err)
		}
	}
	return errs
}

// filterOperands says which operand each expression takes (seed, C3).
var filterOperands = map[string]string{
	"eq": "value", "ne": "value", "like": "value", "not_like": "value",
	"ilike": "value", "not_ilike": "value", "rlike": "value", "not_rlike": "value",
	"gt": "value", "lt": "value", "ge": "value", "le": "value",
	"in": "values", "not_in": "values", "between": "between",
}

func (f Filter) validate() error {
	op, ok := filterOperands[f.Expression]
	if !ok {
		return fmt.Errorf("unknown expression %q", f.Expression)
	}
	if f.Field == "" {
		return errors.New("field must be set")
	}
	switch op {
	case "value":
		if len(f.Values) > 0 {
			return fmt.Errorf("%s takes value, not values", f.Expression)
		}
	case "values":
		if f.Value != "" || len(f.Values) == 0 {
			return fmt.Errorf("%s takes a non-empty values list, not value", f.Expression)
		}
	case "between":
		if f.Value != "" || len(f.Values) != 2 {
			return errors.New("between takes values with exactly two boundaries")
		}
	}
	return nil
}

func checkURL(s string) error {
	if s == "" {
		return errors.New("must be set")
	}
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("is not a URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("must be an http or https URL")
	}
	if u.Host == "" || u.Hostname() == "" {
		return errors.New("must have a host")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("port %q must be a number from 1 to 65535", p)
		}
	}
	return nil
}

// checkAccount checks a sub-account name, which is sent as the
// Account-Name header (C2) and used as a label: a control character (a
// newline) would inject a header or break a label.
func checkAccount(a string) error {
	switch {
	case strings.TrimSpace(a) == "":
		return errors.New("must not be empty")
	case strings.TrimSpace(a) != a:
		return fmt.Errorf("%q has leading or trailing spaces", a)
	case strings.ContainsFunc(a, unicode.IsControl):
		return fmt.Errorf("%q holds a control character", a)
	}
	return nil
}
