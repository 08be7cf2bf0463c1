package tap

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/svcexport/collector/internal/secret"
)

// MinToken is the fewest characters a tap's token may have: a shorter one
// could be guessed (`openssl rand -hex 32` makes a good one).
const MinToken = 16

// ReadToken returns the token the file at path holds (surrounding spaces
// and newlines trimmed): a regular file of at most secret.MaxFileBytes
// (secret.ReadFile), holding at least MinToken characters. The server
// reads it at every tap, `collector tap --token-file` once; the error
// names the file, never its content.
func ReadToken(path string) (secret.Secret, error) {
	b, err := secret.ReadFile(path, secret.MaxFileBytes)
	if err != nil {
		return secret.Secret{}, errors.New(secret.FileProblem(path, err))
	}
	tok := strings.TrimSpace(string(b))
	switch {
	case tok == "":
		return secret.Secret{}, fmt.Errorf("file %s is empty", path)
	case len(tok) < MinToken:
		return secret.Secret{}, fmt.Errorf("file %s holds a token of %d characters, fewer than %d: it could be guessed (`openssl rand -hex 32` makes one)", path, len(tok), MinToken)
	}
	return secret.New(tok), nil
}

// Why a tap is refused for its token (the 401's words): they tell the
// operator what to send, never what the token is.
var (
	errNoToken    = errors.New("/tap asks for a bearer token (Authorization: Bearer TOKEN): collector tap --token-file FILE, the file of the collector's metrics.tap.token_file")
	errWrongToken = errors.New("/tap: wrong bearer token (not the one of the collector's metrics.tap.token_file)")
)

// Authorized reports whether r sends the bearer token want, compared as
// a tap's is (the collector's POST /-/reload asks for one too).
func Authorized(r *http.Request, want secret.Secret) bool { return authorize(r, want) == nil }

// authorize checks r's bearer token against want in constant time: both
// are hashed first, so that neither their bytes nor their lengths show in
// the time the comparison takes.
func authorize(r *http.Request, want secret.Secret) error {
	h := r.Header.Get("Authorization")
	scheme, got, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(got) == "" {
		return errNoToken
	}
	a := sha256.Sum256([]byte(strings.TrimSpace(got)))
	b := sha256.Sum256([]byte(want.Reveal()))
	if subtle.ConstantTimeCompare(a[:], b[:]) != 1 {
		return errWrongToken
	}
	return nil
}
