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
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/secret"
)

// tokenSource hands out the bearer token of one credential.
type tokenSource interface {
	// token returns a token believed valid.
	token(ctx context.Context) (string, error)
	// invalidate drops tok after a 401 so the next token call renews it;
	// it reports whether a renewal is possible at all.
	invalidate(tok string) bool
}

// staticToken is the edge token (C6): configured, never renewed.
type staticToken struct{ s secret.Secret }

func (t staticToken) token(context.Context) (string, error) { return t.s.Reveal(), nil }
func (t staticToken) invalidate(string) bool                { return false }

// coreTokens obtains and renews the core bearer token of one API key
// (CONTRACT C1). One token at a time; a renewal is single-flight: callers
// that need a token while one is being obtained wait for it, and callers
// whose token is still valid keep using it meanwhile.
type coreTokens struct {
	c      *Client
	keyID  string
	secret secret.Secret
	header string
	ttl    time.Duration

	mu      sync.Mutex
	tok     string
	renewAt time.Time
	expires time.Time
	flight  *renewal
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
		t.mu.Unlock()

		tok, expires, err := t.fetch(ctx)

		t.mu.Lock()
		if err == nil {
			now := t.c.clk.Now()
			life := expires.Sub(now)
			t.tok, t.expires = tok, expires
			t.renewAt = now.Add(renewAfter(life))
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

// renewAfter is when to renew a token of the given life: at 80% of it or 5
// minutes before it ends, whichever is earlier, but not before half of it.
func renewAfter(life time.Duration) time.Duration {
	return max(min(life*8/10, life-5*time.Minute), life/2)
}

func (t *coreTokens) invalidate(tok string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tok == tok {
		t.tok = ""
	}
	return true
}

// fetch asks the token endpoint for a new token (C1), spending the token
// bucket (C4). The error never holds the secret.
func (t *coreTokens) fetch(ctx context.Context) (string, time.Time, error) {
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
	}, func(h http.Header) { h.Set(t.header, t.secret.Reveal()) })
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
