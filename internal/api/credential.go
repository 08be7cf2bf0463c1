package api

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/svcexport/collector/internal/secret"
)

// credential is the core API secret or the edge token: given inline, or
// read from its file (api.secret_file, edge.token_file) at start and anew
// whenever the client needs it again: at every renewal of a core token,
// when the token endpoint refuses the secret, and when the edge API
// refuses the edge token (issue 29: rotating the file is enough, no
// restart). Each value read is added to the client's scrubber, which never
// forgets the ones before.
type credential struct {
	key  string // the configuration key of file, for messages: "api.secret_file"
	file string // "" when given inline

	mu   sync.Mutex
	last secret.Secret // the value read last (or given inline); never empty
}

// newCredential resolves inline, else file (named key in errors), and
// adds the value to scr. An empty value is an error naming emptyKey.
func newCredential(inline secret.Secret, key, file, emptyKey string, scr *secret.Scrubber) (*credential, error) {
	s, err := secret.Resolve(inline.Reveal(), file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	if !s.IsSet() {
		return nil, errors.New(emptyKey + ": empty")
	}
	scr.Add(s)
	c := &credential{key: key, last: s}
	if !inline.IsSet() {
		c.file = file
	}
	return c, nil
}

// current returns the value read last, without reading the file.
func (c *credential) current() secret.Secret {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// reread reads the file again and returns its value, which becomes the
// current one and is added to the scrubber of cl. A file that cannot be
// read now, or is empty (an outside process rewriting it in place), keeps
// the value read before, with a warning of cl (one per interval) that
// names the file and never its content. An inline credential is returned
// as it is.
func (c *credential) reread(ctx context.Context, cl *Client) secret.Secret {
	if c.file == "" {
		return c.current()
	}
	s, err := secret.FromFile(c.file)
	problem := ""
	switch {
	case err != nil:
		problem = secret.FileProblem(c.file, err)
	case !s.IsSet():
		problem = "file " + c.file + " is empty"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if problem != "" {
		cl.warn.Warn(ctx, c.key, "secret_file", c.key+" cannot be read now; the value read before is used", "problem", problem)
		return c.last
	}
	if s.Reveal() != c.last.Reveal() {
		cl.scrub.Add(s)
		cl.log.Info("read a new value from " + c.key)
		c.last = s
	}
	return c.last
}

// edgeToken is the edge token (C6): the API cannot renew it, but its
// file may have been rewritten: a refused token is replaced by the file's
// new content, if it holds another.
type edgeToken struct {
	c    *Client
	cred *credential
}

func (t *edgeToken) token(context.Context) (string, error) { return t.cred.current().Reveal(), nil }
func (t *edgeToken) served(string)                         {}

// refused reads edge.token_file again: a renewal is possible when the
// current token is no longer tok (another request's refusal got a new one
// already) or the file now holds another token. An inline token cannot
// change.
func (t *edgeToken) refused(tok string) bool {
	if t.cred.file == "" {
		return false
	}
	if t.cred.current().Reveal() != tok {
		return true
	}
	return t.cred.reread(context.Background(), t.c).Reveal() != tok
}

// ReadSecretAgain reads the client's secret file (api.secret_file) or
// token file (edge.token_file) now, as a configuration reload asks: a new
// value is logged (never shown) and used from the next core token, or
// the next edge request, on. A file that cannot be read now keeps the
// value before, with a warning; an inline value is left as it is.
func (c *Client) ReadSecretAgain(ctx context.Context) { c.cred.reread(ctx, c) }
