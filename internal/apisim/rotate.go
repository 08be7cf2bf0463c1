package apisim

import "fmt"

// SetKeySecret rotates the secret of the key keyID (C1): from now on the
// token endpoint takes secret for it, and no longer the old one. The
// tokens minted before stay valid until they expire or are revoked
// (RevokeTokens), as on the platform, where rotating a key and revoking
// its tokens are two acts.
func (s *Server) SetKeySecret(keyID, secret string) error {
	if secret == "" {
		return fmt.Errorf("apisim: the secret of key %q must not be empty", keyID)
	}
	idx := s.auth.findKey(keyID)
	if idx < 0 {
		return fmt.Errorf("apisim: no key %q", keyID)
	}
	s.auth.mu.Lock()
	s.auth.secrets[idx] = secret
	s.auth.mu.Unlock()
	return nil
}

// RevokeTokens kills every token minted so far for user (C1), as an
// administrator revoking a rotated key's tokens does: the next data request
// with one is answered 401.
func (s *Server) RevokeTokens(user string) { s.auth.revoke(user) }

// SetEdgeToken rotates the edge token (C6): from now on the edge API takes
// tok, and no longer the old token.
func (s *Server) SetEdgeToken(tok string) error {
	if tok == "" {
		return fmt.Errorf("apisim: the edge token must not be empty")
	}
	s.auth.mu.Lock()
	s.auth.edge = tok
	s.auth.mu.Unlock()
	return nil
}
