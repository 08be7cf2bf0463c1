package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/svcexport/collector/internal/api/budget"
	"github.com/svcexport/collector/internal/api/origin"
	"github.com/svcexport/collector/internal/backoff"
	"github.com/svcexport/collector/internal/clock"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/secret"
)

// Request is one API request as the client retries it.
type Request struct {
	// Method and URL; a relative URL is resolved against the base URL,
	// an absolute one is used verbatim (C3 next-page URLs) when its origin
	// is the base URL's or an allowed one, else refused with an
	// *origin.Error before any request.
	Method, URL string
	// Body is sent as JSON; nil for none.
	Body []byte
	// Account is sent as Account-Name when not empty (C2).
	Account string
	// OrgAccess sends Org-Access: true (C2, audit logs only).
	OrgAccess bool
	// Functionality is the rate bucket spent (C4).
	Functionality string
	// Priority orders the request among waiters for the bucket.
	Priority budget.Priority
	// NextPage marks a next-page GET: its 404 means an expired chain (C3).
	NextPage bool
	// What says what is being done, for errors and logs, e.g.
	// "fetch page 3 of dns/acme [start, end)".
	What string
	// Admitted, when not nil, runs after the rate budget admitted the
	// request and before it is sent, at every attempt; an error ends Do.
	// The poller reserves room in the pipeline here, so that it holds no
	// room while it waits for budget (a long budget wait is not a stalled
	// pipeline).
	Admitted func(ctx context.Context) error
	// Decode reads a 2xx body (nil for 204); an error makes the answer a
	// cut-off, non-JSON or malformed body, which is retried (C5). An error
	// wrapping ErrMalformedPage is retried under reason "malformed".
	Decode func(status int, body []byte) error
}

// Response is a successful answer.
type Response struct {
	Status   int
	Header   http.Header
	Body     []byte
	Received time.Time
}

// Do sends req with bearer authentication, retrying transient failures
// (C5). A 401 means the core token died (C1): the token is renewed (once
// for all requests that saw it die) and the request repeated at once; a
// 401 again is a transient error of this request, retried with backoff.
// Only the token endpoint refusing the key (401, 403 there) or a 401 on
// the edge token (C6), which cannot be renewed, is a permanent error; a
// refused edge token is first replaced by what edge.token_file holds now,
// when that is another token, and the request repeated at once. Its
// errors wrap a *StatusError, a *PermanentError (around an *origin.Error
// or a *BodyTooLargeError for those) or ctx's error, and never hold a
// credential or the user info of a URL.
func (c *Client) Do(ctx context.Context, req Request) (*Response, error) {
	return c.do(ctx, req, nil)
}

// do runs the retry loop. auth, when not nil, sets the credential headers
// instead of the bearer token (the token request itself).
func (c *Client) do(ctx context.Context, req Request, auth func(http.Header)) (*Response, error) {
	// C1, C3: the origin is checked before a token is obtained or a
	// rate token spent.
	target, err := c.resolve(req.URL)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", req.What, &PermanentError{err})
	}
	renewed := false
	for attempt := 0; ; attempt++ {
		var tok string
		if auth == nil {
			var err error
			if tok, err = c.tokens.token(ctx); err != nil {
				if ctx.Err() != nil {
					return nil, fmt.Errorf("%s: %w", req.What, ctx.Err())
				}
				return nil, fmt.Errorf("%s: %w", req.What, err)
			}
		}
		if err := c.budget.Acquire(ctx, c.user, req.Functionality, c.rate, req.Priority); err != nil {
			return nil, fmt.Errorf("%s: %w", req.What, err)
		}
		if req.Admitted != nil {
			if err := req.Admitted(ctx); err != nil {
				c.done(req, budget.Headers{}, 0) // nothing was sent
				return nil, fmt.Errorf("%s: %w", req.What, err)
			}
		}
		resp, status, err := c.once(ctx, req, target, tok, auth)
		if err == nil {
			if auth == nil {
				c.tokens.served(tok)
			}
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w", req.What, ctx.Err())
		}
		var te *transientError
		if !errors.As(err, &te) {
			// C1: a data request's 401 says that its token died
			// (revoked, a server restart), not that the key is refused:
			// only the token endpoint says that, and token() returns its
			// refusal as the permanent error it is. The token is dropped
			// (once, however many requests saw it die) and the request
			// repeated with its successor. The edge token (C6) cannot be
			// renewed: its 401 is final, unless edge.token_file holds
			// another token by now (a rotated file).
			if status != http.StatusUnauthorized || auth != nil || !c.tokens.refused(tok) {
				return nil, fmt.Errorf("%s: %w", req.What, err)
			}
			if !renewed {
				// The first 401: repeat at once, with a new token.
				renewed = true
				c.m.retry(req.Functionality, "401")
				c.log.Info("token refused, renewing", "what", req.What)
				attempt--
				continue
			}
			// A later 401: another request's revocation killed the new
			// token before this repeat (C1: an error of this request,
			// not of the stream). Retried like a 5xx: backoff, within
			// api.retry.max_attempts, with the token then current.
			var se *StatusError
			errors.As(err, &se)
			te = &transientError{"401", se}
			err = te
		}
		if c.retry.MaxAttempts > 0 && attempt+1 >= c.retry.MaxAttempts {
			return nil, fmt.Errorf("%s: giving up after %d attempts: %w", req.What, attempt+1, err)
		}
		// C5: capped exponential backoff with full jitter (a uniform draw
		// in [0, cap]), so that clients failing together do not retry
		// together.
		wait := backoff.Policy{Initial: c.retry.Initial, Max: c.retry.Max, Jitter: backoff.Full, Rand: c.rnd}.Wait(attempt)
		if status == http.StatusTooManyRequests {
			// C4/C5: the server's reset sets the minimum wait, up to
			// the bucket's period (once logs the clamp); a little
			// jitter keeps waiters from arriving together.
			h := budget.ParseHeaders(resp.Header).Clamp(c.period(req))
			if h.HasReset {
				wait = h.Reset + time.Duration(c.rnd(int64(min(h.Reset/10, time.Second))+1))
			}
		}
		c.m.retry(req.Functionality, te.reason)
		args := []any{"what", req.What, "reason", te.reason, "attempt", attempt + 1, "wait", wait.String(), "err", c.scrubText(err.Error())}
		if attempt >= 2 || te.reason == "malformed" {
			// A malformed 2xx is never routine (C5: it would have been
			// lost): always a warning, one per stream and reason per
			// interval, like repeated failures.
			c.warn.Warn(ctx, streamKey(req), "retry_"+te.reason, "request failed, retrying", args...)
		} else {
			c.log.Debug("request failed, retrying", args...)
		}
		if err := clock.Sleep(ctx, c.clk, wait); err != nil {
			return nil, fmt.Errorf("%s: %w", req.What, err)
		}
	}
}

// once sends one attempt. It returns the response (also for a 429, for its
// headers), the status (0 without answer) and the attempt's error, which
// wraps *transientError when the attempt may be repeated.
func (c *Client) once(ctx context.Context, req Request, u, tok string, auth func(http.Header)) (*Response, int, error) {
	start := c.clk.Now()
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var body io.Reader
	if req.Body != nil {
		body = bytes.NewReader(req.Body)
	}
	hr, err := http.NewRequestWithContext(rctx, req.Method, u, body)
	if err != nil {
		c.done(req, budget.Headers{}, 0)
		return nil, 0, &PermanentError{fmt.Errorf("build request: %s", c.scrubText(err.Error()))}
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	if auth != nil {
		auth(hr.Header)
	} else {
		hr.Header.Set("Authorization", "Bearer "+tok)
	}
	if req.OrgAccess {
		hr.Header.Set("Org-Access", "true")
	} else if req.Account != "" {
		hr.Header.Set("Account-Name", req.Account)
	}
	res, err := c.http.Do(hr)
	if err != nil {
		c.done(req, budget.Headers{}, 0)
		c.m.request(req.Functionality, "error", c.clk.Now().Sub(start).Seconds())
		var oe *origin.Error
		if errors.As(err, &oe) {
			// CheckRedirect refused the redirect: nothing was sent there.
			return nil, 0, &PermanentError{oe}
		}
		reason := "network"
		if errors.Is(err, context.DeadlineExceeded) {
			reason = "timeout"
		}
		return nil, 0, &transientError{reason, errors.New(c.scrubText(err.Error()))}
	}
	h := c.rateHeaders(ctx, res.Header, req)
	ok := res.StatusCode >= 200 && res.StatusCode < 300
	if ok && res.ContentLength > c.maxBody {
		// Announced over the limit: not a byte is read.
		res.Body.Close()
		c.done(req, h, res.StatusCode)
		c.m.request(req.Functionality, strconv.Itoa(res.StatusCode), c.clk.Now().Sub(start).Seconds())
		return nil, res.StatusCode, &PermanentError{&BodyTooLargeError{Status: res.StatusCode, Limit: c.maxBody, Length: res.ContentLength}}
	}
	limit := c.maxBody
	if !ok {
		// An error answer is a short message; a long one is cut, not
		// refused, so that a 5xx page of HTML stays a retried 5xx.
		limit = min(limit, maxErrorBody)
	}
	b, rerr := readBody(res, limit)
	res.Body.Close()
	c.done(req, h, res.StatusCode)
	now := c.clk.Now()
	c.m.request(req.Functionality, strconv.Itoa(res.StatusCode), now.Sub(start).Seconds())
	if !ok && int64(len(b)) > limit {
		b, rerr = b[:limit], nil
	}
	resp := &Response{Status: res.StatusCode, Header: res.Header, Body: b, Received: now}
	if res.StatusCode == http.StatusTooManyRequests {
		c.m.rateLimitedInc(req.Functionality)
		return resp, res.StatusCode, &transientError{"429", &StatusError{Status: 429, Message: c.message(b)}}
	}
	if rerr != nil {
		reason := "body"
		if errors.Is(rerr, context.DeadlineExceeded) {
			reason = "timeout"
		}
		return nil, res.StatusCode, &transientError{reason, fmt.Errorf("read body (HTTP %d): %s", res.StatusCode, c.scrubText(rerr.Error()))}
	}
	if int64(len(b)) > c.maxBody {
		return nil, res.StatusCode, &PermanentError{&BodyTooLargeError{Status: res.StatusCode, Limit: c.maxBody, Length: res.ContentLength}}
	}
	switch {
	case res.StatusCode >= 500:
		return nil, res.StatusCode, &transientError{"5xx", &StatusError{Status: res.StatusCode, Message: c.message(b)}}
	case res.StatusCode >= 400:
		se := &StatusError{Status: res.StatusCode, Message: c.message(b), NextPage: req.NextPage}
		return nil, res.StatusCode, &PermanentError{se}
	case res.StatusCode < 200 || res.StatusCode >= 300:
		return nil, res.StatusCode, &transientError{"status", fmt.Errorf("unexpected HTTP %d", res.StatusCode)}
	}
	if res.StatusCode == http.StatusNoContent {
		resp.Body = nil
	}
	if req.Decode != nil {
		if err := req.Decode(res.StatusCode, resp.Body); err != nil {
			reason := "body"
			if errors.Is(err, ErrMalformedPage) {
				reason = "malformed"
			}
			return nil, res.StatusCode, &transientError{reason, fmt.Errorf("HTTP %d body: %s", res.StatusCode, c.scrubText(err.Error()))}
		}
	}
	return resp, res.StatusCode, nil
}

// maxErrorBody bounds what is read of an error answer (C5: {"message"}).
const maxErrorBody = 64 << 10

// streamKey names the stream of a request for the warning limiter.
func streamKey(req Request) string {
	if req.OrgAccess {
		return req.Functionality + "/" + record.OrgAccount
	}
	return req.Functionality + "/" + req.Account
}

// rateHeaders reads the RateLimit headers of an answer. A RateLimit-Reset
// beyond the bucket's period (api.rate.period, edge.rate.period) is
// clamped to the period, and the clamp logged at WARN (rate-limited): by
// C4 a token comes back within one period, and a reset of 9999999 s would
// put the stream to sleep for months.
func (c *Client) rateHeaders(ctx context.Context, hdr http.Header, req Request) budget.Headers {
	h := budget.ParseHeaders(hdr)
	if period := c.period(req); h.HasReset && h.Reset > period {
		c.warn.Warn(ctx, streamKey(req), "reset_clamped", "RateLimit-Reset beyond the rate period; waiting one period instead",
			"what", req.What, "reset", h.Reset.String(), "period", period.String())
		h = h.Clamp(period)
	}
	return h
}

// done hands the token of req back to the budget with its answer's headers
// h and status (empty and 0 without an answer).
func (c *Client) done(req Request, h budget.Headers, status int) {
	c.budget.Done(c.user, req.Functionality, h, status)
}

// period is the refill period of req's bucket.
func (c *Client) period(req Request) time.Duration {
	return c.budget.Period(c.user, req.Functionality)
}

// resolve returns the absolute URL of ref: relative to the base URL, or ref
// verbatim when absolute (C3: next-page URLs are opaque). Either way the
// result must go to an origin the credentials belong to; otherwise the
// error is an *origin.Error (C1, C3, C6). No error holds the URL's user info.
func (c *Client) resolve(ref string) (string, error) {
	u, err := url.Parse(ref)
	if err != nil {
		return "", fmt.Errorf("bad URL: %s", c.scrubText(err.Error()))
	}
	out := ref
	switch {
	case u.IsAbs():
		// C3: used verbatim.
	case strings.HasPrefix(ref, "/"):
		// Paths of the specs are relative to the base URL, which may
		// itself carry a path prefix.
		b := *c.base
		p, q, _ := strings.Cut(ref, "?")
		b.Path = strings.TrimRight(b.Path, "/") + p
		b.RawPath = ""
		b.RawQuery = q
		u, out = &b, b.String()
	default:
		u = c.base.ResolveReference(u)
		out = u.String()
	}
	if err := c.origins.Check(u, false); err != nil {
		return "", err
	}
	return out, nil
}

// message returns the API's error message (C5: {"message": ...}),
// scrubbed of credentials and then shortened (a secret cut in two is no
// longer recognized).
func (c *Client) message(b []byte) string {
	var m struct {
		Message string `json:"message"`
	}
	s := ""
	if json.Unmarshal(b, &m) == nil && m.Message != "" {
		s = m.Message
	} else {
		s = strings.TrimSpace(string(b))
	}
	s = c.scrubText(s)
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// scrubText removes from s, in case a server or a transport error echoes
// them, every credential of the process in each form a request carries it
// in (Options.Scrubber), the client's current and previous bearer tokens,
// and the user info of every URL.
func (c *Client) scrubText(s string) string {
	s = origin.ScrubURLs(c.scrub.Scrub(s))
	if ct, ok := c.tokens.(*coreTokens); ok {
		ct.mu.Lock()
		toks := [...]string{ct.tok, ct.prev}
		ct.mu.Unlock()
		for _, tok := range toks {
			if tok != "" {
				s = strings.ReplaceAll(s, tok, secret.Redacted)
			}
		}
	}
	return s
}

// readBody reads at most limit+1 bytes of the body, into one buffer of the
// announced size when there is one (a page is megabytes: growing a buffer by
// doubling would copy it several times and keep twice its size).
func readBody(res *http.Response, limit int64) ([]byte, error) {
	r := io.LimitReader(res.Body, limit+1)
	if n := res.ContentLength; n > 0 && n <= limit {
		buf := bytes.NewBuffer(make([]byte, 0, n+bytes.MinRead))
		_, err := buf.ReadFrom(r)
		return buf.Bytes(), err
	}
	return io.ReadAll(r)
}
