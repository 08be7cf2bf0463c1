package apisim

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// handleToken serves POST /api/v2/access/tokens (C1): the key's secret in
// the secret header, body {"keyId", "expiryTime"}, answer 201 {"token",
// "expiresAt"}. The endpoint has its own bucket per user (C4).
func (s *Server) handleToken(w http.ResponseWriter, r *http.Request) {
	now := s.now()
	if !isJSON(r) {
		writeError(w, http.StatusBadRequest, "Content-Type must be application/json")
		return
	}
	body, err := readBody(r, s.cfg.MaxBodyBytes)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	keyID, expiry, err := parseTokenBody(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	idx := s.auth.findKey(keyID)
	if idx < 0 {
		s.stats.add("", fnToken, func(c *Counter) { c.Requests++; c.Unauthorized++ })
		writeError(w, http.StatusUnauthorized, "unknown key or wrong secret")
		return
	}
	key := &s.cfg.Keys[idx]
	q := s.limits.take(key.User, fnToken, now)
	q.setHeaders(w.Header())
	if !q.ok {
		s.stats.add(key.User, fnToken, func(c *Counter) { c.Requests++; c.RateLimited++ })
		writeError(w, http.StatusTooManyRequests, "rate limit exceeded for the token endpoint")
		return
	}
	secret := r.Header.Get(s.cfg.SecretHeader)
	if secret == "" || subtle.ConstantTimeCompare([]byte(secret), []byte(s.auth.secret(idx))) != 1 {
		s.stats.add(key.User, fnToken, func(c *Counter) { c.Requests++; c.Unauthorized++ })
		writeError(w, http.StatusUnauthorized, "unknown key or wrong secret")
		return
	}
	s.stats.add(key.User, fnToken, func(c *Counter) { c.Requests++ })
	if key.Role == RoleAccountUser {
		writeError(w, http.StatusForbidden, "account users may not create tokens")
		return
	}
	life := s.cfg.TokenDefaultExpiry
	if expiry != nil {
		life = time.Duration(*expiry) * time.Second
		if *expiry <= 0 || life > s.cfg.TokenMaxExpiry {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("expiryTime must be between 1 and %d seconds", int64(s.cfg.TokenMaxExpiry/time.Second)))
			return
		}
	}
	exp := now.Add(life)
	tok := s.auth.mint(idx, exp)
	out := make([]byte, 0, len(tok)+64)
	out = append(out, `{"token":`...)
	out = strconv.AppendQuote(out, tok)
	out = append(out, `,"expiresAt":"`...)
	out = appendISO(out, exp.UnixMilli(), false)
	out = append(out, `"}`...)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(out)
}

// parseTokenBody reads {"keyId": string, "expiryTime": integer seconds}.
func parseTokenBody(body []byte) (keyID string, expiry *int64, err error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		return "", nil, fmt.Errorf("the body must be a JSON object with keyId")
	}
	for k := range m {
		if k != "keyId" && k != "expiryTime" {
			return "", nil, fmt.Errorf("unknown member %q in the token request", k)
		}
	}
	if err := jsonString(m["keyId"], &keyID); err != nil || keyID == "" {
		return "", nil, fmt.Errorf("keyId is required and must be a non-empty string")
	}
	if raw, ok := m["expiryTime"]; ok {
		raw = bytes.TrimSpace(raw)
		v, perr := strconv.ParseInt(string(raw), 10, 64)
		if perr != nil {
			return "", nil, fmt.Errorf("expiryTime must be an integer number of seconds")
		}
		expiry = &v
	}
	return keyID, expiry, nil
}
