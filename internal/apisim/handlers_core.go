package apisim

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// caller is an admitted core request: who asks, for which account.
type caller struct {
	user    string
	key     *KeyConfig
	account string // configured spelling, or "org"
}

// admitCore runs the checks every core data request passes, in this order:
// bearer token (401), rate bucket of (user, source) (429; every later
// answer carries the RateLimit-* headers and has spent a token), token
// revocation fault (401), then account selection (C2: Org-Access only on
// AuditLogs/search, else 400; org data needs an org admin whose key is not
// NoOrgAccess, 403; an unknown account or one the key may not read, by
// role or AllowedAccounts, 403). It writes the error answer itself and
// reports false then.
func (s *Server) admitCore(w http.ResponseWriter, r *http.Request, src sourceID, now time.Time) (caller, bool) {
	fn := src.info().name
	tok, ok := bearer(r)
	if !ok {
		s.stats.add("", fn, func(c *Counter) { c.Requests++; c.Unauthorized++ })
		writeError(w, http.StatusUnauthorized, "authentication required: send Authorization: Bearer <token>")
		return caller{}, false
	}
	p, valid := s.auth.check(tok, now)
	if !valid {
		if p.user != "" {
			s.limits.peek(p.user, fn, now).setHeaders(w.Header())
		}
		s.stats.add(p.user, fn, func(c *Counter) { c.Requests++; c.Unauthorized++ })
		writeError(w, http.StatusUnauthorized, "the bearer token is invalid, expired or revoked")
		return caller{}, false
	}
	q := s.limits.take(p.user, fn, now)
	q.setHeaders(w.Header())
	if !q.ok {
		s.stats.add(p.user, fn, func(c *Counter) { c.Requests++; c.RateLimited++ })
		writeError(w, http.StatusTooManyRequests, "rate limit exceeded for "+fn)
		return caller{}, false
	}
	if s.faults.revokeNow(p.user) {
		s.auth.revoke(p.user)
		s.stats.add(p.user, fn, func(c *Counter) { c.Requests++; c.Unauthorized++; c.Revocations++ })
		writeError(w, http.StatusUnauthorized, "the bearer token was revoked")
		return caller{}, false
	}
	s.stats.add(p.user, fn, func(c *Counter) { c.Requests++ })
	c := caller{user: p.user, key: p.key}
	if strings.EqualFold(strings.TrimSpace(r.Header.Get("Org-Access")), "true") {
		if src != srcAuditLogs {
			writeError(w, http.StatusBadRequest, "Org-Access is accepted only by AuditLogs/search")
			return caller{}, false
		}
		if p.key.Role != RoleOrgAdmin {
			writeError(w, http.StatusForbidden, "organization-level data needs an organization admin")
			return caller{}, false
		}
		if p.key.NoOrgAccess {
			writeError(w, http.StatusForbidden, fmt.Sprintf("user %s has no access to organization-level data", p.user))
			return caller{}, false
		}
		c.account = OrgAccount
		return c, true
	}
	name := strings.TrimSpace(r.Header.Get("Account-Name"))
	if name == "" {
		name = p.key.Account
	}
	a, ok := s.accountName(name)
	if !ok {
		writeError(w, http.StatusForbidden, fmt.Sprintf("account %q is not part of this organization", name))
		return caller{}, false
	}
	if !p.key.mayRead(a) {
		writeError(w, http.StatusForbidden, fmt.Sprintf("user %s may not read account %q", p.user, a))
		return caller{}, false
	}
	c.account = a
	return c, true
}

// mayRead reports whether the key may read account a (its configured
// spelling): an org admin every account, an account admin its own, and
// either only those of AllowedAccounts when that is set.
func (k *KeyConfig) mayRead(a string) bool {
	if k.Role != RoleOrgAdmin && !strings.EqualFold(a, k.Account) {
		return false
	}
	if len(k.AllowedAccounts) == 0 {
		return true
	}
	for _, x := range k.AllowedAccounts {
		if strings.EqualFold(x, a) {
			return true
		}
	}
	return false
}

// injectError answers a chosen data request with 500 or 503 (fault).
func (s *Server) injectError(w http.ResponseWriter, user, fn string) bool {
	code := s.faults.serverError()
	if code == 0 {
		return false
	}
	s.stats.add(user, fn, func(c *Counter) { c.ServerErrors++ })
	writeError(w, code, "injected fault: "+http.StatusText(code))
	return true
}

func isJSON(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// readBody reads a POST body of at most max bytes (C5: larger is 400).
func readBody(r *http.Request, max int64) ([]byte, error) {
	if max <= 0 {
		return io.ReadAll(r.Body)
	}
	if r.ContentLength > max {
		return nil, fmt.Errorf("the body is over the limit of %d bytes", max)
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("the body is over the limit of %d bytes", max)
	}
	return b, nil
}

// handleSearch serves the first page of a search: POST .../search with a
// body, or GET CloudActivities with startTime and endTime (C3).
func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request, src sourceID) {
	si := src.info()
	now := s.now()
	c, ok := s.admitCore(w, r, src, now)
	if !ok {
		return
	}
	var q query
	var err error
	if si.method == http.MethodPost {
		if !isJSON(r) {
			writeError(w, http.StatusBadRequest, "Content-Type must be application/json")
			return
		}
		body, rerr := readBody(r, s.cfg.MaxBodyBytes)
		if rerr != nil {
			writeError(w, http.StatusBadRequest, rerr.Error())
			return
		}
		q, err = parseSearchBody(body, si, now, s.rules)
	} else {
		var v url.Values
		if v, err = url.ParseQuery(r.URL.RawQuery); err == nil {
			q, err = parseCloudActivitiesQuery(v, now, s.rules)
		}
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if s.injectError(w, c.user, si.name) {
		return
	}
	ch := chain{
		src: src, account: c.account, user: c.user,
		start: q.start, end: q.end, snap: now.UnixMilli(),
		filtersRaw: q.filtersRaw, returnsRaw: q.returnsRaw,
	}
	if src == srcAgentInfo && q.noTime && s.cfg.FleetAgents > 0 {
		ch.start, ch.end = fleetChain, fleetChain
	}
	s.servePage(w, r, &ch, q.filters, q.returns, true)
}

// handleNextPage serves GET {search path}/pages/{token} (C3): same bearer
// and account headers as the first page, no body. An unknown, forged or
// expired token answers 404.
func (s *Server) handleNextPage(w http.ResponseWriter, r *http.Request, src sourceID, tok string) {
	si := src.info()
	now := s.now()
	c, ok := s.admitCore(w, r, src, now)
	if !ok {
		return
	}
	notFound := func(msg string) {
		s.stats.add(c.user, si.name, func(c *Counter) { c.NextPage404++ })
		writeError(w, http.StatusNotFound, msg)
	}
	ch, err := openChain(tok, s.auth.key)
	if err != nil || ch.src != src || ch.user != c.user {
		notFound("unknown page token")
		return
	}
	if ttl := s.cfg.NextPageTTL; ttl > 0 && now.UnixMilli()-ch.snap > ttl.Milliseconds() {
		notFound("the next-page URL has expired; ask for the window again")
		return
	}
	if !strings.EqualFold(ch.account, c.account) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf(
			"the next page belongs to account %q: send the same Account-Name and Org-Access headers as the first page", ch.account))
		return
	}
	var q query
	if q.filters, err = parseFilters(ch.filtersRaw, si); err == nil {
		q.returns, err = parseReturns(ch.returnsRaw, si)
	}
	if err != nil {
		notFound("unknown page token")
		return
	}
	if s.injectError(w, c.user, si.name) {
		return
	}
	s.servePage(w, r, &ch, q.filters, q.returns, false)
}

// servePage writes page number ch.page of a chain and, unless it is the
// last, a next-page URL carrying the advanced chain (C3). An empty result
// answers 204; AuditLogs answers without paging when everything fits in one
// page, or always (cut to one page) with AuditUnpaged.
func (s *Server) servePage(w http.ResponseWriter, r *http.Request, ch *chain, fs []filter, keep []string, first bool) {
	if ch.start == fleetChain && ch.end == fleetChain {
		s.serveFleet(w, r, ch)
		return
	}
	si := ch.src.info()
	st := s.stream(ch.src, ch.account)
	pl := newPlan(st, ch.start, ch.end)
	if first {
		total, err := s.total(r.Context(), pl, ch.snap, fs)
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, "search aborted: "+err.Error())
			return
		}
		ch.total = total
		if total == 0 {
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	limit := int64(s.cfg.PageSize)
	bound := ch.total
	if capRows := int64(s.cfg.ResultCap); capRows > 0 {
		limit = min(limit, capRows-ch.served)
		bound = min(bound, capRows)
	}
	wk := s.pool.Get().(*worker)
	defer s.pool.Put(wk)
	pm := newPerm(uint64(pl.n), permKey(st, ch.start, ch.end))
	wk.rows = wk.rows[:0]
	rows, next := s.fillPage(wk, pl, &pm, ch.cursor, ch.snap, fs, keep, limit)
	ch.served += rows
	ch.cursor = next
	ch.page++
	hasNext := ch.served < bound && next < pl.n
	h := wk.head[:0]
	if ch.src == srcAuditLogs && first && (ch.total <= int64(s.cfg.PageSize) || s.cfg.AuditUnpaged) {
		h = append(h, `{"data":[`...)
	} else {
		h = append(h, `{"paging":{"rows":`...)
		h = strconv.AppendInt(h, rows, 10)
		h = append(h, `,"totalRows":`...)
		h = strconv.AppendInt(h, s.reportedTotal(ch.total), 10)
		h = append(h, `,"urls":{`...)
		if hasNext {
			h = s.appendNextPage(h, r, si, ch)
		}
		h = append(h, `}},"data":[`...)
	}
	wk.head = h
	s.stats.add(ch.user, si.name, func(c *Counter) { c.RowsServed += rows; c.Pages++ })
	s.sendData(w, r, wk.head, wk.rows, []byte("]}"))
}

// reportedTotal is the totalRows a page reports for a result set of total
// rows: the true count, or at most total_rows_cap (C3: the service may cap
// the count). The chain itself is bounded by the true count.
func (s *Server) reportedTotal(total int64) int64 {
	if c := s.cfg.TotalRowsCap; c > 0 {
		return min(total, c)
	}
	return total
}

// baseURL is the scheme and host the request came to, so next-page URLs are
// absolute (C3) whether the simulator runs on its own or embedded.
func baseURL(r *http.Request) string {
	if r.TLS != nil {
		return "https://" + r.Host
	}
	return "http://" + r.Host
}
