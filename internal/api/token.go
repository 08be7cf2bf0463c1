package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/svcexport/collector/internal/api/budget"
	"github.com/svcexport/collector/internal/backoff"
	"github.com/svcexport/collector/internal/clock"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/secret"
)

// tokenSource hands out the bearer token of one credential.
type tokenSource interface {
	// token returns a token believed valid.
	token(ctx context.Context) (string, error)
	// refused takes a data request's 401 on tok (C1: the token died,
	// revoked or lost in a restart): tok is dropped when it is still the
	// current token, so that the next token call renews it, once however
	// many requests saw the 401; a 401 on a token already replaced renews
	// nothing. It reports whether a renewal is possible at all.
	refused(tok string) bool
	// served records that a data request with tok went through.
	served(tok string)
}

// coreTokens obtains and renews the core bearer token of one API key
// (CONTRACT C1). One token at a time; a renewal is single-flight: callers
// that need a token while one is being obtained wait for it, and callers
// whose token is still valid keep using it meanwhile.
//
// Renewals after refusals are paced (C4: the token endpoint has its own
// bucket, shared with the user's other clients): a token refused before
// any request with it went through, after a predecessor that did the same,
// is a strike, and each strike doubles the least time from one token to
// the next, from api.retry.initial up to api.retry.max. A request that
// goes through with either token clears the strikes, so that revocations
// interleaved with work are renewed at once, however frequent. A token is
// judged with its predecessor because a revocation's 401 may overtake the
// answers of requests that went through with the same token just before.
type coreTokens struct {
	c      *Client
	keyID  string
	cred   *credential // the key's secret, read anew for every token (api.secret_file)
	header string
	ttl    time.Duration

	mu      sync.Mutex
	tok     string // current token; "" when none or refused
	renewAt time.Time
	expires time.Time
	flight  *renewal
	// used: a request with tok went through. prev, prevUsed: the token
	// before (dropped or replaced), and whether one of its requests went
	// through, as far as known.
	used     bool
	prev     string
	prevUsed bool
	minted   time.Time // when tok (or the last token) was obtained
	strikes  int       // tokens in a row refused before serving a request
}

type renewal struct {
	done chan struct{}
	err  error
}

// tokenResponse is the token endpoint's answer (C1: no data wrapper).
type tokenResponse struct {
	Token     string `json:"token"`
	ExpiresAt string `json:"expiresAt"`
}

func (t *coreTokens) token(ctx context.Context) (string, error) {
	for {
		now := t.c.clk.Now()
		t.mu.Lock()
		if t.tok != "" && now.Before(t.renewAt) {
			tok := t.tok
			t.mu.Unlock()
			return tok, nil
		}
		if f := t.flight; f != nil {
			// Someone renews. A token that has not expired yet is still
			// good for this request.
			if t.tok != "" && now.Add(time.Minute).Before(t.expires) {
				tok := t.tok
				t.mu.Unlock()
				return tok, nil
			}
			t.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				return "", ctx.Err()
			}
			if f.err != nil && ctx.Err() == nil && !errors.Is(f.err, context.Canceled) && !errors.Is(f.err, context.DeadlineExceeded) {
				return "", f.err
			}
			continue
		}
		f := &renewal{done: make(chan struct{})}
		t.flight = f
		wait := t.pace(now)
		strikes := t.strikes
		t.mu.Unlock()

		var (
			tok     string
			expires time.Time
			err     error
		)
		if wait > 0 {
			t.c.warn.Warn(ctx, "token", "renewal_paced", "tokens die before serving a request; pacing their renewals",
				"strikes", strikes, "wait", wait.String())
			err = clock.Sleep(ctx, t.c.clk, wait)
		}
		if err == nil {
			tok, expires, err = t.fetch(ctx)
		}

		t.mu.Lock()
		if err == nil {
			t.install(tok, expires, t.c.clk.Now())
		}
		f.err = err
		t.flight = nil
		close(f.done)
		t.mu.Unlock()
		if err != nil {
			return "", err
		}
		return tok, nil
	}
}

// install makes tok, valid until expires, the current token, obtained at
// now. t.mu is held.
func (t *coreTokens) install(tok string, expires, now time.Time) {
	if t.tok != "" {
		// A scheduled renewal: the old token is the predecessor.
		t.prev, t.prevUsed = t.tok, t.used
	}
	t.tok, t.expires, t.used, t.minted = tok, expires, false, now
	t.renewAt = now.Add(renewAfter(expires.Sub(now)))
}

// renewAfter is when to renew a token of the given life: at 80% of it or 5
// minutes before it ends, whichever is earlier, but not before half of it.
func renewAfter(life time.Duration) time.Duration {
	return max(min(life*8/10, life-5*time.Minute), life/2)
}

// refused drops tok when it is the current token (single-flight: the
// first 401 on a token drops it, later ones on the same token find it
// gone and wait for, or use, its successor) and counts a strike when
// neither it nor its predecessor served a request (see coreTokens).
func (t *coreTokens) refused(tok string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tok == "" || t.tok != tok {
		return true
	}
	if !t.used && t.prev != "" && !t.prevUsed {
		t.strikes++
	}
	t.prev, t.prevUsed = t.tok, t.used
	t.tok, t.used = "", false
	return true
}

// served marks tok, the current token or its predecessor, as having served
// a request, which clears the strikes: tokens are renewed at once again
// (see coreTokens).
func (t *coreTokens) served(tok string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch tok {
	case "":
		return
	case t.tok:
		t.used = true
	case t.prev:
		t.prevUsed = true
	default:
		return
	}
	t.strikes = 0
}

// pace returns how long a renewal starting at now waits: nothing for the
// first token and for a scheduled renewal, else until the last token is
// strikes doublings of api.retry.initial old, at most api.retry.max (C4).
// t.mu is held.
func (t *coreTokens) pace(now time.Time) time.Duration {
	if t.tok != "" || t.strikes == 0 || t.minted.IsZero() {
		return 0
	}
	gap := backoff.Policy{Initial: t.c.retry.Initial, Max: t.c.retry.Max}.Cap(t.strikes - 1)
	return t.minted.Add(gap).Sub(now)
}

// fetch asks the token endpoint for a new token (C1), spending the token
// bucket (C4), with the secret api.secret_file holds now. When the
// endpoint refuses the secret (401, 403) and the file holds another one by
// then (rotated while the request was under way), it asks once more with
// that one. The error never holds the secret.
func (t *coreTokens) fetch(ctx context.Context) (string, time.Time, error) {
	s := t.cred.reread(ctx, t.c)
	tok, expires, err := t.ask(ctx, s)
	var se *StatusError
	if err != nil && errors.As(err, &se) && (se.Status == http.StatusUnauthorized || se.Status == http.StatusForbidden) {
		if again := t.cred.reread(ctx, t.c); again.Reveal() != s.Reveal() {
			t.c.log.Info("token endpoint refused the secret; asking again with the new content of api.secret_file")
			tok, expires, err = t.ask(ctx, again)
		}
	}
	return tok, expires, err
}

// ask sends one token request (retried by do as C5 says) with secret s.
func (t *coreTokens) ask(ctx context.Context, s secret.Secret) (string, time.Time, error) {
	body, err := json.Marshal(map[string]any{"keyId": t.keyID, "expiryTime": int64(t.ttl / time.Second)})
	if err != nil {
		return "", time.Time{}, err
	}
	var tr tokenResponse
	_, err = t.c.do(ctx, Request{
		Method:        http.MethodPost,
		URL:           "/api/v2/access/tokens",
		Body:          body,
		Functionality: FunctionalityToken,
		Priority:      budget.Priority{Fresh: true},
		What:          "obtain API token for key " + t.keyID,
		Decode: func(status int, b []byte) error {
			if err := json.Unmarshal(b, &tr); err != nil {
				return fmt.Errorf("token response: %w", err)
			}
			if strings.TrimSpace(tr.Token) == "" {
				return errors.New("token response without token")
			}
			return nil
		},
	}, func(h http.Header) { h.Set(t.header, s.Reveal()) })
	if err != nil {
		return "", time.Time{}, err
	}
	now := t.c.clk.Now()
	expires := now.Add(t.ttl)
	if tr.ExpiresAt != "" {
		if e, perr := record.ParseTimeString(tr.ExpiresAt); perr == nil && e.After(now) {
			expires = e
		}
	}
	t.c.m.renewal(t.c.api)
	t.c.log.Info("API token obtained", "expires_at", expires.UTC().Format(time.RFC3339))
	return tr.Token, expires, nil
}
