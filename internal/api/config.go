package api

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/svcexport/collector/internal/api/budget"
	"github.com/svcexport/collector/internal/api/origin"
	"github.com/svcexport/collector/internal/secret"
)

// day is 24 hours; the API states its limits in days (CONTRACT C3).
const day = 24 * time.Hour

// MaxTokenTTL is the longest bearer token life the API grants (seed: 86400 s).
const MaxTokenTTL = 24 * time.Hour

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

// RetryConfig is the backoff for transient errors (C5), a 401 after a
// token renewal among them (C1). Initial and Max also pace the renewals of
// core tokens that die before serving a request (C4: the token endpoint's
// bucket).
type RetryConfig struct {
	// Initial is the first backoff. Default 1s.
	Initial time.Duration `koanf:"initial"`
	// Max caps one backoff. Default 2m.
	Max time.Duration `koanf:"max"`
	// MaxAttempts bounds the attempts of one request for transient errors;
	// 0 (the default) is unlimited.
	MaxAttempts int `koanf:"max_attempts"`
}

// Config configures the core API (koanf section "api"): where it is, the
// credential, the budget and the retries of the client, and the limits of
// its result sets (C3), which the pollers read.
type Config struct {
	BaseURL string `koanf:"base_url"`
	KeyID   string `koanf:"key_id"`
	// Secret is the key's secret, usually from the environment. Secret wins
	// over SecretFile.
	Secret secret.Secret `koanf:"secret"`
	// SecretFile holds the secret. It is read at start and again at every
	// token renewal and whenever the token endpoint refuses the secret:
	// rotating the file is enough, no restart.
	SecretFile string `koanf:"secret_file"`
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
	MaxBodyBytes int64 `koanf:"max_body_bytes"`
	// MaxRequestBytes is the largest POST body the API takes (C5: 1 MB;
	// larger is 400). Default 1 MiB. A search body (with its filters and
	// returns) over it is a configuration error at start.
	MaxRequestBytes int64 `koanf:"max_request_bytes"`
	// PermanentErrorRetry is how often a stream whose requests are refused
	// for good (400, 403, 404 but a next-page expiry, 405, 409: C5) asks
	// again: such a stream leaves the fast retry loop, is reported blocked,
	// and is asked again at this slow pace, since a permission can be
	// granted later. Default 15m.
	PermanentErrorRetry time.Duration `koanf:"permanent_error_retry"`
	Retry               RetryConfig   `koanf:"retry"`
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

// EdgeConfig is the connection to the edge API (CONTRACT C6): where it is,
// its token, the per-request timeout, its bucket and where the token may
// go. It is the part of the koanf section "edge" that the client reads;
// the section itself, with the keys of the edge streams, is package
// source's EdgeConfig, which hands this part over.
type EdgeConfig struct {
	// BaseURL of the edge API.
	BaseURL string
	// Token is the edge bearer token; it wins over TokenFile.
	Token secret.Secret
	// TokenFile holds the token. It is read at start and again whenever
	// the edge API refuses the token: rotating the file is enough, no
	// restart.
	TokenFile string
	// Timeout bounds one request. Default 125s.
	Timeout time.Duration
	// Rate is the edge bucket; limits are unpublished, default 480/1h.
	Rate RateConfig
	// AllowedOrigins lists the origins, besides BaseURL's, that may
	// receive the edge token (see Config.AllowedOrigins).
	AllowedOrigins []string
}

// DefaultRate returns 480 tokens per hour with 10% reserve (seed, C4).
func DefaultRate() RateConfig {
	r := budget.DefaultRate()
	return RateConfig{Limit: r.Limit, Period: r.Period, Reserve: r.Reserve}
}

// bucket returns the rate of a budget bucket.
func (r RateConfig) bucket() budget.Rate {
	return budget.Rate{Limit: r.Limit, Period: r.Period, Reserve: r.Reserve}
}

// DefaultConfig returns the core API defaults of the seed and contract.
func DefaultConfig() Config {
	return Config{
		SecretHeader: "X-SVC-UAKS",
		TokenTTL:     time.Hour,
		Timeout:      125 * time.Second,
		Rate:         DefaultRate(),
		MaxHistory:   92 * day,
		PageRows:     5000,
		ResultCap:    500000,
		NextPageTTL:  24 * time.Hour,
		MaxPages:     100,
		MaxBodyBytes: 64 << 20,
		// C5: POST bodies over 1 MB are refused.
		MaxRequestBytes:     1 << 20,
		PermanentErrorRetry: 15 * time.Minute,
		Retry:               RetryConfig{Initial: time.Second, Max: 2 * time.Minute},
	}
}

// DefaultEdgeConfig returns the edge connection defaults of CONTRACT C6.
func DefaultEdgeConfig() EdgeConfig {
	return EdgeConfig{Timeout: 125 * time.Second, Rate: DefaultRate()}
}

// Validate checks the core API configuration and names each bad key by its
// full path ("api.token_ttl: ..."); all problems are joined.
func (c Config) Validate() error { return errors.Join(c.validate("api")...) }

func (c Config) validate(p string) []error {
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
	if c.MaxRequestBytes < 1024 {
		add("max_request_bytes", "must be at least 1024")
	}
	if c.PermanentErrorRetry <= 0 {
		add("permanent_error_retry", "must be positive")
	}
	errs = append(errs, c.Retry.validate(p+".retry")...)
	errs = append(errs, origin.Validate(p+".allowed_origins", c.AllowedOrigins)...)
	return errs
}

// Validate checks the edge connection and names each bad key by its full
// path ("edge.timeout: ..."); all problems are joined.
func (c EdgeConfig) Validate() error { return errors.Join(c.validate("edge")...) }

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
	if c.Timeout <= 0 {
		add("timeout", "must be positive")
	}
	errs = append(errs, c.Rate.validate(p+".rate")...)
	errs = append(errs, origin.Validate(p+".allowed_origins", c.AllowedOrigins)...)
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

// checkURL checks a base URL (api.base_url, edge.base_url): the
// documented form scheme://host[:port][/path]. A query or a fragment is
// refused (issue 20): the requests never carry them (the paths of the
// specs bring their own query), while check and the logs would show them,
// a signature (?sig=...) included. Its errors never repeat the URL.
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
	if strings.ContainsAny(s, "?#") {
		return errors.New("must not have a query (?...) or a fragment (#...): write scheme://host[:port][/path]; requests would not carry them, while check and the logs would show them")
	}
	return nil
}
