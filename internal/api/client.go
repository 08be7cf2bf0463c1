package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/svcexport/collector/internal/api/budget"
	"github.com/svcexport/collector/internal/api/origin"
	"github.com/svcexport/collector/internal/clock"
	"github.com/svcexport/collector/internal/ratelog"
	"github.com/svcexport/collector/internal/secret"
)

// Options are the injected dependencies of a Client. Every field may be
// left zero: HTTPClient defaults to a new http.Client without timeout (the
// Client sets one per request), Clock to clock.System, Logger to a discarding
// logger, Metrics to none, WarnEvery to ratelog.DefaultEvery, Scrubber to
// one of the client's own credential.
type Options struct {
	// HTTPClient is copied, never modified: the Client's copy gets a
	// CheckRedirect that refuses redirects to other origins (C1), which
	// runs before the caller's own CheckRedirect, if any.
	HTTPClient *http.Client
	Clock      clock.Clock
	Logger     *slog.Logger
	Metrics    *Metrics
	// WarnEvery is the interval of warnings that may repeat at a high
	// rate (retries, flawed records, clamped rate-limit resets): one
	// line per stream and kind per interval. Default one minute.
	WarnEvery time.Duration
	// Scrubber removes credentials from every error text and log line the
	// client makes of a server's answer or a transport error: the
	// process's one (secret.Scrubber), so that an API that echoes a
	// request shows no secret of the process. The client adds its own
	// credential to it. Default: a scrubber of that credential alone.
	Scrubber *secret.Scrubber
}

func (o Options) withDefaults() Options {
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.Clock == nil {
		o.Clock = clock.System{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.WarnEvery <= 0 {
		o.WarnEvery = ratelog.DefaultEvery
	}
	if o.Scrubber == nil {
		o.Scrubber = secret.NewScrubber()
	}
	return o
}

// Budget is the rate budget as the client spends it (CONTRACT C4): a token
// of the bucket of (user, functionality) before every attempt, handed back
// with the answer's RateLimit headers, which re-sync the bucket. One is
// shared by every client of the process. *budget.Budget is the
// collector's; it is safe for concurrent use, as any Budget must be.
type Budget interface {
	// Acquire waits until the bucket of user and functionality admits a
	// request of priority p, or ctx ends (its error). The bucket is made
	// with rate on first use. Every nil return is followed by exactly one
	// Done.
	Acquire(ctx context.Context, user, functionality string, rate budget.Rate, p budget.Priority) error
	// Done ends an admitted request and syncs the bucket from its answer:
	// the RateLimit headers h and the status, or empty headers and 0 when
	// no answer came.
	Done(user, functionality string, h budget.Headers, status int)
	// Period returns the bucket's refill period: the longest wait a
	// RateLimit-Reset may ask for.
	Period(user, functionality string) time.Duration
	// Rate returns the bucket's rate as it stands: the server's
	// RateLimit-Limit once an answer said one, else the configured limit
	// (rate, with which the bucket is made on first use).
	Rate(user, functionality string, rate budget.Rate) budget.Rate
}

var _ Budget = (*budget.Budget)(nil)

// Functionality names of the buckets that are not a core source (C4).
const (
	// FunctionalityToken is the token endpoint's bucket (C1, C4).
	FunctionalityToken = "token"
	// FunctionalityEdge is the one bucket of the edge API (C6).
	FunctionalityEdge = "edge"
)

// Client talks to the core API or to the edge API: bearer token, account
// headers, per-request timeout, bounded bodies, rate budget and the one
// layer of retries of the collector (CONTRACT C1, C2, C4, C5). It is safe
// for concurrent use; all accounts of one credential share one Client.
type Client struct {
	api     string // "core" or "edge"
	base    *url.URL
	http    *http.Client
	clk     clock.Clock
	log     *slog.Logger
	m       *Metrics
	budget  Budget
	user    string
	rate    budget.Rate
	timeout time.Duration
	maxBody int64
	retry   RetryConfig
	tokens  tokenSource
	cred    *credential       // the secret (core) or token (edge) the tokens use
	scrub   *secret.Scrubber  // removes credentials from every error text (Options.Scrubber)
	rnd     func(int64) int64 // draws the jitter of every wait
	origins origin.Set        // where the credentials may go (C1, C3, C6)
	warn    *ratelog.Limiter  // repeated warnings, one per stream and kind per interval
}

// NewClient returns the core API client of cfg. The secret comes from
// cfg.Secret or else cfg.SecretFile, which is read at start and again at
// every token renewal and whenever the token endpoint refuses the secret,
// so that a rotated file is used without a restart. b is the
// process-wide budget; nil makes one for this client alone.
func NewClient(cfg Config, b Budget, o Options) (*Client, error) {
	if errs := cfg.validate("api"); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	c, err := newClient("core", cfg.BaseURL, "api.allowed_origins", cfg.AllowedOrigins, b, o)
	if err != nil {
		return nil, err
	}
	cred, err := newCredential(cfg.Secret, "api.secret_file", cfg.SecretFile, "api.secret", c.scrub)
	if err != nil {
		return nil, err
	}
	c.user = cfg.User
	if c.user == "" {
		c.user = cfg.KeyID
	}
	c.rate, c.timeout, c.maxBody, c.retry = cfg.Rate.bucket(), cfg.Timeout, cfg.MaxBodyBytes, cfg.Retry
	c.tokens, c.cred = &coreTokens{c: c, keyID: cfg.KeyID, cred: cred, header: cfg.SecretHeader, ttl: cfg.TokenTTL}, cred
	return c, nil
}

// NewEdgeClient returns the edge API client of cfg (CONTRACT C6); retries
// and the body limit come from core (api.retry, api.max_body_bytes). The
// token comes from cfg.Token or else cfg.TokenFile, which is read at start
// and again whenever the edge API refuses the token: a refused request is
// repeated at once when the file holds another token by then.
func NewEdgeClient(cfg EdgeConfig, core Config, b Budget, o Options) (*Client, error) {
	if errs := cfg.validate("edge"); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	c, err := newClient("edge", cfg.BaseURL, "edge.allowed_origins", cfg.AllowedOrigins, b, o)
	if err != nil {
		return nil, err
	}
	cred, err := newCredential(cfg.Token, "edge.token_file", cfg.TokenFile, "edge.token", c.scrub)
	if err != nil {
		return nil, err
	}
	c.user = "edge"
	c.rate, c.timeout, c.maxBody, c.retry = cfg.Rate.bucket(), cfg.Timeout, core.MaxBodyBytes, core.Retry
	if c.maxBody <= 0 {
		c.maxBody = DefaultConfig().MaxBodyBytes
	}
	if c.retry.Initial <= 0 {
		c.retry = DefaultConfig().Retry
	}
	c.tokens, c.cred = &edgeToken{c: c, cred: cred}, cred
	return c, nil
}

// newClient builds the parts common to both APIs. originsKey names the
// allow-list setting of allowed, the origins besides base's that may
// receive the credentials.
func newClient(api, base, originsKey string, allowed []string, b Budget, o Options) (*Client, error) {
	o = o.withDefaults()
	baseKey := strings.TrimSuffix(originsKey, "allowed_origins") + "base_url"
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%s: not an absolute URL", baseKey)
	}
	origins, err := origin.New(u, originsKey, allowed)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", baseKey, err)
	}
	if b == nil {
		b = budget.New(o.Clock, o.Metrics)
	}
	// A copy: the caller's client may serve others, and its own redirect
	// policy still runs after ours.
	hc := *o.HTTPClient
	hc.CheckRedirect = origins.CheckRedirect(o.HTTPClient.CheckRedirect)
	log := o.Logger.With("api", api)
	if api == "core" {
		o.Metrics.initFunctionality(FunctionalityToken) // its retries too, at 0
	}
	return &Client{
		api: api, base: u, http: &hc, clk: o.Clock, log: log,
		m: o.Metrics, budget: b, rnd: rand.Int64N, origins: origins,
		warn: ratelog.New(log, o.Clock.Now, o.WarnEvery), scrub: o.Scrubber,
	}, nil
}

// API returns "core" or "edge".
func (c *Client) API() string { return c.api }

// Budget returns the budget the client spends.
func (c *Client) Budget() Budget { return c.budget }

// Rate returns the rate of the client's bucket of functionality as it
// stands (C4): the server's RateLimit-Limit once an answer said one, else
// the configured rate (api.rate, edge.rate). Pollers pace themselves by
// it.
func (c *Client) Rate(functionality string) budget.Rate {
	return c.budget.Rate(c.user, functionality, c.rate)
}

// Clock returns the client's clock (Options.Clock), for those that pace
// their requests by it.
func (c *Client) Clock() clock.Clock { return c.clk }

// Logger returns the client's logger: Options.Logger with the attribute
// api="core" or "edge".
func (c *Client) Logger() *slog.Logger { return c.log }

// WarnEvery returns the interval of the client's rate-limited warnings
// (Options.WarnEvery).
func (c *Client) WarnEvery() time.Duration { return c.warn.Every() }

// InitFunctionality creates the metric series of functionality at zero
// (rate limited, rate wait), so that dashboards and alerts see them before
// the first request spends its bucket.
func (c *Client) InitFunctionality(functionality string) { c.m.initFunctionality(functionality) }

// Check obtains a token (core) without reading data: for `collector check`.
func (c *Client) Check(ctx context.Context) error {
	_, err := c.tokens.token(ctx)
	return err
}
