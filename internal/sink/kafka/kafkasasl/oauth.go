package kafkasasl

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/svcexport/collector/internal/secret"
)

// maxTokenResponse bounds the body of a token response read.
const maxTokenResponse = 1 << 20

// maxRefreshMargin is the most a token is renewed before it expires; a
// token renews a quarter of its lifetime early when that is less.
const maxRefreshMargin = time.Minute

// clientCredentials asks a token endpoint for tokens (RFC 6749 section
// 4.4) and keeps each until shortly before it expires. Concurrent
// authentications share one request. Its errors and logs name the key
// and the endpoint, never the client secret or a token: what the endpoint
// says passes the scrubber, in case it echoes the request (the form body,
// the Authorization header).
type clientCredentials struct {
	key      string // configuration path of the token URL, for messages
	url      string
	clientID string
	secret   func() (string, error)
	post     bool // client_secret_post instead of HTTP Basic
	scopes   []string
	client   *http.Client
	now      func() time.Time
	log      *slog.Logger
	scrub    *secret.Scrubber // knows the client secret (and the process's others)

	// sem (capacity 1) is held while the fields below are read or a
	// request is under way; a channel so that waiting honours ctx.
	sem       chan struct{}
	token     string
	expiry    time.Time // zero: unknown
	refreshAt time.Time // zero with a token: never reuse it
}

// Token returns a token valid for a while: the cached one until its
// refresh time, else a new one from the endpoint. When the endpoint fails
// and the cached token has not expired yet, that token is returned and
// the failure logged.
func (c *clientCredentials) Token(ctx context.Context) (string, error) {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return "", fmt.Errorf("%s: wait for the token request under way: %w", c.key, ctx.Err())
	}
	defer func() { <-c.sem }()
	now := c.now()
	if c.token != "" && !c.refreshAt.IsZero() && now.Before(c.refreshAt) {
		return c.token, nil
	}
	tok, lifetime, err := c.fetch(ctx)
	if err != nil {
		if c.token != "" && !c.expiry.IsZero() && now.Before(c.expiry) {
			c.log.Warn("kafka oauth: token refresh failed; using the current token until it expires",
				"component", "kafka", "expires_in", c.expiry.Sub(now).Round(time.Second).String(), "err", err)
			return c.token, nil
		}
		return "", err
	}
	c.token, c.expiry, c.refreshAt = tok, time.Time{}, time.Time{}
	if lifetime > 0 {
		c.expiry = now.Add(lifetime)
		c.refreshAt = c.expiry.Add(-min(lifetime/4, maxRefreshMargin))
	}
	c.log.Debug("kafka oauth: token fetched", "component", "kafka", "token_url", redactURL(c.url), "lifetime", lifetime.String())
	return tok, nil
}

// tokenResponse is a token endpoint's answer (RFC 6749 sections 5.1, 5.2).
type tokenResponse struct {
	AccessToken      string          `json:"access_token"`
	TokenType        string          `json:"token_type"`
	ExpiresIn        json.RawMessage `json:"expires_in"` // a number; some endpoints send a string
	Error            string          `json:"error"`
	ErrorDescription string          `json:"error_description"`
}

// fetch makes one token request and returns the token and its lifetime
// (0: unknown).
func (c *clientCredentials) fetch(ctx context.Context) (string, time.Duration, error) {
	fail := func(format string, args ...any) (string, time.Duration, error) {
		return "", 0, c.scrub.Error(fmt.Errorf("%s: token request to %s: %w", c.key, redactURL(c.url), fmt.Errorf(format, args...)))
	}
	cs, err := c.secret()
	if err != nil {
		return "", 0, err
	}
	form := url.Values{"grant_type": {"client_credentials"}}
	if len(c.scopes) > 0 {
		form.Set("scope", strings.Join(c.scopes, " "))
	}
	if c.post {
		form.Set("client_id", c.clientID)
		form.Set("client_secret", cs)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(form.Encode()))
	if err != nil {
		return fail("invalid request (check the URL)")
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if !c.post {
		// RFC 6749 section 2.3.1: both form-encoded before Basic.
		req.SetBasicAuth(url.QueryEscape(c.clientID), url.QueryEscape(cs))
	}
	resp, err := c.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is in our message already
		}
		return fail("%w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse))
	if err != nil {
		return fail("read the answer: %w", err)
	}
	var tr tokenResponse
	jsonErr := json.Unmarshal(body, &tr)
	if resp.StatusCode != http.StatusOK {
		if jsonErr == nil && tr.Error != "" {
			// Scrubbed whole before clip cuts them: a secret cut in two
			// is no longer recognized.
			return fail("status %d: %s%s", resp.StatusCode, clip(c.scrub.Scrub(tr.Error)), describe(c.scrub.Scrub(tr.ErrorDescription)))
		}
		return fail("status %d", resp.StatusCode)
	}
	if jsonErr != nil {
		mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		return fail("the answer (content-type %q) is not a JSON token response", mt)
	}
	if tr.AccessToken == "" {
		return fail("the answer has no access_token")
	}
	if tr.TokenType != "" && !strings.EqualFold(tr.TokenType, "bearer") {
		return fail("token_type %q, want Bearer", clip(c.scrub.Scrub(tr.TokenType)))
	}
	lifetime, err := expiresIn(tr.ExpiresIn)
	if err != nil {
		return fail("%v", err)
	}
	if lifetime == 0 {
		lifetime = jwtLifetime(tr.AccessToken, c.now())
	}
	return tr.AccessToken, lifetime, nil
}

// expiresIn reads expires_in, a number of seconds (or its string); absent
// is 0.
func expiresIn(raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	s := strings.Trim(string(raw), `"`)
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || n < 0 || n > 1e9 {
		return 0, fmt.Errorf("expires_in %.40s is not a number of seconds", raw)
	}
	return time.Duration(n * float64(time.Second)), nil
}

// jwtLifetime is how long a JWT access token is still valid by its exp
// claim (read, not verified: the brokers verify it), or 0 when the token
// is no JWT or has no exp.
func jwtLifetime(token string, now time.Time) time.Duration {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return 0
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return 0
	}
	var claims struct {
		Exp json.Number `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil {
		return 0
	}
	exp, err := claims.Exp.Int64()
	if err != nil {
		return 0
	}
	if d := time.Unix(exp, 0).Sub(now); d > 0 {
		return d
	}
	return 0
}

// clip shortens what an endpoint said to a length fit for a message.
func clip(s string) string {
	const n = 200
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func describe(d string) string {
	if d == "" {
		return ""
	}
	return " (" + clip(d) + ")"
}
