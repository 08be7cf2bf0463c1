package apisim

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// writeError answers status with the seed's error body {"message": msg}.
func writeError(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(struct {
		Message string `json:"message"`
	}{msg})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeJSON answers status with v encoded by encoding/json (not for pages:
// they are written by hand).
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "encode response: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// sendData writes a data response made of parts, applying the slow and
// cut-off faults (C5): a cut response declares the full Content-Length,
// writes part of the body and returns, upon which the server closes the
// connection because the body is short.
func (s *Server) sendData(w http.ResponseWriter, r *http.Request, parts ...[]byte) {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	s.faults.slow(r.Context())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(n))
	w.WriteHeader(http.StatusOK)
	cut := s.faults.cutAt(n)
	for _, p := range parts {
		if cut >= 0 {
			if cut < len(p) {
				_, _ = w.Write(p[:cut])
				if f, ok := w.(http.Flusher); ok {
					f.Flush()
				}
				return
			}
			cut -= len(p)
		}
		if _, err := w.Write(p); err != nil {
			return
		}
	}
}
