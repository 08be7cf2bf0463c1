package apisim

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"time"

	"github.com/svcexport/collector/internal/record"
)

// Truth returns what GET /_truth answers (C8): the number of records of
// (source, account) with record time in [start, end) that are visible now,
// and the XOR of their C7 ids as 64 hex digits. Edge alerts count in their
// current version. An unknown source or account gives -1 and "".
func (s *Server) Truth(source, account string, start, end time.Time) (count int64, xorHex string) {
	st, err := s.truthStream(source, account)
	if err != nil {
		return -1, ""
	}
	d, err := s.truth(context.Background(), st, start.UnixMilli(), end.UnixMilli(), s.now().UnixMilli())
	if err != nil {
		return -1, ""
	}
	return d.Count, d.Hex()
}

// Visible is one record of a truth list (C8 list=1): its C7 id, its
// record time, and when it became visible (record time plus its ingestion
// delay).
type Visible struct {
	ID       string
	Time, At time.Time
}

// TruthList returns the records of (source, account) with record time in
// [start, end) that are visible now, with when each became visible, in
// record time order (what GET /_truth?list=1 answers).
func (s *Server) TruthList(ctx context.Context, source, account string, start, end time.Time) ([]Visible, error) {
	st, err := s.truthStream(source, account)
	if err != nil {
		return nil, err
	}
	return s.truthList(ctx, st, start.UnixMilli(), end.UnixMilli(), s.now().UnixMilli())
}

func (s *Server) truthList(ctx context.Context, st *stream, start, end, now int64) ([]Visible, error) {
	end = min(end, now)
	if end <= start {
		return nil, nil
	}
	pl := newPlan(st, start, end)
	late := s.lateness()
	name := st.src.info().name
	var out []Visible
	var r rec
	var canon []byte
	pl.each(pl.m0, pl.m1, func(_ int64, _ uint32, key uint64, t int64) bool {
		if ctx.Err() != nil {
			return false
		}
		if !visible(key, t, now, late) {
			return true
		}
		s.gen.generate(&r, st, key, t, now)
		canon = r.appendCanonical(canon[:0])
		out = append(out, Visible{ID: record.IDOfCanonical(name, canon), Time: time.UnixMilli(t).UTC(), At: time.UnixMilli(t + late.delay(key, t)).UTC()})
		return true
	})
	return out, ctx.Err()
}

func (s *Server) truthStream(source, account string) (*stream, error) {
	src, ok := sourceByName(source)
	if !ok {
		return nil, fmt.Errorf("unknown source %q", source)
	}
	if account == OrgAccount {
		if src != srcAuditLogs {
			return nil, fmt.Errorf("account %q holds audit_logs only", OrgAccount)
		}
		return s.stream(src, OrgAccount), nil
	}
	a, ok := s.accountName(account)
	if !ok {
		return nil, fmt.Errorf("unknown account %q", account)
	}
	return s.stream(src, a), nil
}

// truth digests the stream's records in [start, end) visible at now, on
// every core: each record is generated in canonical form and its id made by
// record.IDOfCanonical, the same id the collector computes from the served
// bytes with record.ID.
func (s *Server) truth(ctx context.Context, st *stream, start, end, now int64) (record.Digest, error) {
	end = min(end, now)
	if end <= start {
		return record.Digest{}, nil
	}
	pl := newPlan(st, start, end)
	late := s.lateness()
	name := st.src.info().name
	parts := make([]record.Digest, runtime.GOMAXPROCS(0))
	var errs = make([]error, len(parts))
	canon := make([][]byte, len(parts))
	err := s.parallelMinutes(ctx, pl.m0, pl.m1, len(parts), func(g int, wk *worker, from, to int64) {
		pl.each(from, to, func(_ int64, _ uint32, key uint64, t int64) bool {
			if !visible(key, t, now, late) {
				return true
			}
			s.gen.generate(&wk.r, st, key, t, now)
			canon[g] = wk.r.appendCanonical(canon[g][:0])
			if err := parts[g].Add(record.IDOfCanonical(name, canon[g])); err != nil {
				errs[g] = err
				return false
			}
			return true
		})
	})
	var d record.Digest
	for g := range parts {
		if errs[g] != nil {
			return d, errs[g]
		}
		d.Count += parts[g].Count
		for i := range d.Xor {
			d.Xor[i] ^= parts[g].Xor[i]
		}
	}
	return d, err
}

// handleTruth serves GET /_truth?source=S&account=A&start=T&end=T (C8, no
// authentication; T in RFC 3339).
func (s *Server) handleTruth(w http.ResponseWriter, r *http.Request) {
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, http.StatusBadRequest, "malformed query string")
		return
	}
	st, err := s.truthStream(v.Get("source"), v.Get("account"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var ts [2]time.Time
	for i, k := range [2]string{"start", "end"} {
		if ts[i], err = time.Parse(time.RFC3339Nano, strings.TrimSpace(v.Get(k))); err != nil {
			writeError(w, http.StatusBadRequest, k+" must be an RFC 3339 time")
			return
		}
	}
	if ts[1].Before(ts[0]) {
		writeError(w, http.StatusBadRequest, "end is before start")
		return
	}
	if v.Get("list") == "1" {
		vs, err := s.truthList(r.Context(), st, ts[0].UnixMilli(), ts[1].UnixMilli(), s.now().UnixMilli())
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, "truth aborted: "+err.Error())
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		var b strings.Builder
		for _, x := range vs {
			b.WriteString(x.ID)
			b.WriteByte(' ')
			b.WriteString(record.FormatTime(x.At))
			b.WriteByte('\n')
		}
		_, _ = w.Write([]byte(b.String()))
		return
	}
	d, err := s.truth(r.Context(), st, ts[0].UnixMilli(), ts[1].UnixMilli(), s.now().UnixMilli())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "truth aborted: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Count int64  `json:"count"`
		Xor   string `json:"xor"`
	}{d.Count, d.Hex()})
}

// handleStats serves GET /_stats (C8, no authentication).
func (s *Server) handleStats(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.Stats())
}
