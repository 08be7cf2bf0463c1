package apisim

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"strings"
	"sync"
	"time"
)

// authority mints and checks bearer tokens (C1) and holds the credentials
// that may change while the simulator runs: the secret of each key and the
// edge token (rotate.go). Tokens are stateless: HMAC-signed (key index,
// generation, expiry). Revoking a user bumps the user's generation, which
// kills every token minted before. The HMAC key is random per process, so
// a restart kills all tokens, as C1 allows.
type authority struct {
	key  []byte
	keys []KeyConfig // their Secret is the one at start: see secrets

	mu      sync.Mutex
	gens    map[string]uint64 // per user
	secrets []string          // the secret of each key of keys, now
	edge    string            // the edge token (C6), now
}

func newAuthority(keys []KeyConfig, edgeToken string) (*authority, error) {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	secrets := make([]string, len(keys))
	for i, key := range keys {
		secrets[i] = key.Secret
	}
	return &authority{key: k, keys: keys, gens: map[string]uint64{}, secrets: secrets, edge: edgeToken}, nil
}

// secret returns the secret the key of index idx has now.
func (a *authority) secret(idx int) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.secrets[idx]
}

// edgeToken returns the edge token the edge API accepts now.
func (a *authority) edgeToken() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.edge
}

func (a *authority) gen(user string) uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.gens[user]
}

// revoke kills every token of user minted so far.
func (a *authority) revoke(user string) {
	a.mu.Lock()
	a.gens[user]++
	a.mu.Unlock()
}

// findKey returns the index of keyID, or -1.
func (a *authority) findKey(keyID string) int {
	for i := range a.keys {
		if a.keys[i].KeyID == keyID {
			return i
		}
	}
	return -1
}

func (a *authority) mint(keyIdx int, expires time.Time) string {
	user := a.keys[keyIdx].User
	b := make([]byte, 0, 48)
	b = binary.AppendUvarint(b, uint64(keyIdx))
	b = binary.AppendUvarint(b, a.gen(user))
	b = binary.AppendVarint(b, expires.UnixMilli())
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	b = append(b, nonce[:]...)
	m := hmac.New(sha256.New, a.key)
	m.Write(b)
	b = m.Sum(b)[:len(b)+macLen]
	return base64.RawURLEncoding.EncodeToString(b)
}

// principal is the caller a bearer token stands for.
type principal struct {
	key  *KeyConfig
	user string
}

// check resolves a bearer token. When the token is well formed but dead
// (expired or revoked) the user is still returned, so that the 401 can be
// counted against them; ok is false then.
func (a *authority) check(tok string, now time.Time) (p principal, ok bool) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) < 8+macLen {
		return principal{}, false
	}
	body, mac := b[:len(b)-macLen], b[len(b)-macLen:]
	m := hmac.New(sha256.New, a.key)
	m.Write(body)
	if !hmac.Equal(m.Sum(nil)[:macLen], mac) {
		return principal{}, false
	}
	d := decoder{b: body}
	idx, n := binary.Uvarint(d.b)
	if n <= 0 || idx >= uint64(len(a.keys)) {
		return principal{}, false
	}
	d.b = d.b[n:]
	gen, n := binary.Uvarint(d.b)
	if n <= 0 {
		return principal{}, false
	}
	d.b = d.b[n:]
	exp := d.varint()
	if d.bad || len(d.b) != 8 {
		return principal{}, false
	}
	k := &a.keys[idx]
	p = principal{key: k, user: k.User}
	if gen != a.gen(k.User) || now.UnixMilli() >= exp {
		return p, false
	}
	return p, true
}

// bearer extracts the token of an "Authorization: Bearer <token>" header.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	return strings.TrimSpace(h[len(prefix):]), true
}
