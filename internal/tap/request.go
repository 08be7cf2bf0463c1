package tap

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// Bounds of a Request.
const (
	// DefaultLimit is how many envelopes a tap gets when it asks for no
	// limit; MaxLimit the most it may ask for.
	DefaultLimit = 100
	MaxLimit     = 100_000
)

// Request is what a tap asks for: the query of /tap, and the flags of
// `collector tap`.
type Request struct {
	// Source is the source to tap; required.
	Source string
	// Account is the sub-account; "" every account.
	Account string
	// Tenant is the configured tenant (docs/tenants.md); "" every tenant
	// (each envelope names its own).
	Tenant string
	// Limit is how many envelopes end the tap: 1 to MaxLimit; 0 means
	// DefaultLimit.
	Limit int
	// Sample is the share of the envelopes sent, evenly spread: in (0, 1];
	// 0 means 1 (every envelope). 0.01 sends one envelope in a hundred.
	Sample float64
	// Timeout ends the tap even with fewer than Limit envelopes; 0 none.
	Timeout time.Duration
}

// Validate reports a Request the endpoint refuses, naming the parameter.
func (r Request) Validate() error {
	var errs []error
	if r.Source == "" {
		errs = append(errs, errors.New("source is required: /tap?source=dns[&account=A][&tenant=T][&limit=N][&sample=R][&timeout=D]"))
	}
	if r.Limit < 0 || r.Limit > MaxLimit {
		errs = append(errs, fmt.Errorf("limit %d: want 1 to %d", r.Limit, MaxLimit))
	}
	if !(r.Sample >= 0 && r.Sample <= 1) { // NaN too
		errs = append(errs, fmt.Errorf("sample %v: want a share in (0, 1]", r.Sample))
	}
	if r.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %s: want a positive duration", r.Timeout))
	}
	return errors.Join(errs...)
}

// withDefaults is r with its zero Limit and Sample made explicit.
func (r Request) withDefaults() Request {
	if r.Limit == 0 {
		r.Limit = DefaultLimit
	}
	if r.Sample == 0 {
		r.Sample = 1
	}
	return r
}

// Query is r as the query of /tap.
func (r Request) Query() url.Values {
	q := url.Values{"source": {r.Source}}
	if r.Account != "" {
		q.Set("account", r.Account)
	}
	if r.Tenant != "" {
		q.Set("tenant", r.Tenant)
	}
	if r.Limit != 0 {
		q.Set("limit", strconv.Itoa(r.Limit))
	}
	if r.Sample != 0 && r.Sample != 1 {
		q.Set("sample", strconv.FormatFloat(r.Sample, 'g', -1, 64))
	}
	if r.Timeout > 0 {
		q.Set("timeout", r.Timeout.String())
	}
	return q
}

// ParseRequest reads the query of /tap; a Request it returns is valid,
// with its defaults set.
func ParseRequest(q url.Values) (Request, error) {
	r := Request{Source: q.Get("source"), Account: q.Get("account"), Tenant: q.Get("tenant")}
	var errs []error
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("limit %q: want 1 to %d", s, MaxLimit))
		}
		r.Limit = n
	}
	if s := q.Get("sample"); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f <= 0 {
			errs = append(errs, fmt.Errorf("sample %q: want a share in (0, 1]", s))
		}
		r.Sample = f
	}
	if s := q.Get("timeout"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("timeout %q: want a positive duration", s))
		}
		r.Timeout = d
	}
	if len(errs) > 0 {
		return Request{}, errors.Join(errs...)
	}
	if err := r.Validate(); err != nil {
		return Request{}, err
	}
	return r.withDefaults(), nil
}
