package status

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/svcexport/collector/internal/api/budget"
	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/recheck"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/window"
)

// StreamState is one line of "collector state" and of the /state endpoint:
// where a (source, account) stream stands and how long it needs to catch
// up. Its JSON form is what /state serves.
type StreamState struct {
	// Tenant is the stream's tenant (`tenants:`); absent for the
	// one-tenant form.
	Tenant    string    `json:"tenant,omitempty"`
	Source    string    `json:"source"`
	Account   string    `json:"account"`
	Watermark time.Time `json:"watermark"`
	// LagSeconds is now - watermark.
	LagSeconds float64 `json:"lag_seconds"`
	// InFlight is the window whose chain is being walked, if any.
	InFlight *InFlightState `json:"in_flight,omitempty"`
	// Delivered counts records acknowledged over the stream's life.
	Delivered int64 `json:"rows_delivered"`
	// WindowsLeft and RowsLeft estimate the backlog (RowsLeft -1: unknown).
	WindowsLeft int64 `json:"windows_left"`
	RowsLeft    int64 `json:"rows_left"`
	// ETASeconds estimates the time to catch up (-1: unknown).
	ETASeconds float64 `json:"eta_seconds"`
	CaughtUp   bool    `json:"caught_up"`
	LastError  string  `json:"last_error,omitempty"`
	// CadenceSeconds is how often the stream asks for its newest records
	// once caught up; CadenceBound what sets it: budget (its share of the
	// rate budget, interval auto), floor (source.MinCadence) or
	// configured (sources.*.interval). A running collector's is reckoned
	// with the limit the server said (C4); a stopped one's with the
	// configuration.
	CadenceSeconds float64 `json:"cadence_seconds"`
	CadenceBound   string  `json:"cadence_bound,omitempty"`
	// RecheckPending is how many fetched windows have a recheck due
	// (sources.*.recheck, late records, C3).
	RecheckPending int `json:"recheck_pending"`
	// Sinks is every sink's lag on the stream (a running collector only).
	Sinks []SinkLag `json:"sinks,omitempty"`
	// Blocked is set while the API refuses the stream with an error a
	// retry cannot cure (C5; a running collector only).
	Blocked *BlockedState `json:"blocked,omitempty"`
	// Learnt is what the running poller learnt of the server's paging
	// limits (C3); nil before it learnt anything.
	Learnt *LearntState `json:"learnt,omitempty"`
	// Late is what the stream learnt of the platform's delays (C3, late
	// records) and the rechecks it schedules from them; nil before it
	// learnt anything.
	Late *LateState `json:"late,omitempty"`
	// Starting is set while the collector starts and its pollers do not
	// run yet: what the start waits for ("waiting for sink lake: ...").
	// The rest of the line is then the checkpoint's (FromCheckpoint).
	Starting string `json:"starting,omitempty"`
}

// BlockedState says why a stream is out of the fast loop: reason (one of
// forbidden, bad_request, not_found, ...), since when, and the error,
// scrubbed of credentials.
type BlockedState struct {
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"`
	Error  string    `json:"error"`
}

// LateState is what a stream learnt of the platform's delays: the share
// of its records that rechecks found more than 2m, 5m, 15m and 1h after
// their record time (decayed, recent behaviour first), and, with recheck:
// auto and a running collector, the recent windows it sweeps (those that
// ended less than DenseSeconds ago, every CadenceSeconds).
type LateState struct {
	ShareAfter     map[string]float64 `json:"share_after"`
	DenseSeconds   float64            `json:"dense_seconds,omitempty"`
	CadenceSeconds float64            `json:"cadence_seconds,omitempty"`
}

// lateState is the LateState of d with the sweep of dense every cadence
// (zero: not known), nil when d knows nothing.
func lateState(d cursor.Delays, dense, cadence time.Duration) *LateState {
	if d.Empty() {
		return nil
	}
	l := &LateState{ShareAfter: map[string]float64{}, DenseSeconds: dense.Seconds(), CadenceSeconds: cadence.Seconds()}
	for _, a := range recheck.LateAfters {
		l.ShareAfter[recheck.AfterLabel(a)] = recheck.LateShare(d, a)
	}
	return l
}

// LearntState is what a poller saw of the server's paging limits (C3),
// the figures it decides splits with instead of the configured ones.
type LearntState struct {
	// PageRows is the size of a full page seen (0: none yet).
	PageRows int `json:"page_rows,omitempty"`
	// NextPageTTLSeconds is the youngest chain age at which a next page
	// was refused as expired (0: none yet).
	NextPageTTLSeconds float64 `json:"next_page_ttl_seconds,omitempty"`
	// CountCap is the totalRows the server was seen to cap counts at.
	CountCap int64 `json:"count_cap,omitempty"`
	// ChainCapRows is the most rows the server was seen to serve in one
	// next-page chain, below its totalRows (C3; 0: none seen).
	ChainCapRows int64 `json:"chain_cap_rows,omitempty"`
	// SplitAtRows is the count from which a window is split before it
	// is walked: min(api.result_cap, page size seen x api.max_pages,
	// the chain cap seen).
	SplitAtRows int64 `json:"split_at_rows,omitempty"`
}

// SinkLag is what one sink has not acknowledged yet of a stream's pages
// (its records wait in the buffer: the checkpoint follows the slowest
// sink).
type SinkLag struct {
	Sink string `json:"sink"`
	// Delivery is the sink's delivery mode: exactly_once (it stores each
	// record once across crashes) or at_least_once.
	Delivery             string  `json:"delivery,omitempty"`
	PendingRecords       int64   `json:"pending_records"`
	OldestPendingSeconds float64 `json:"oldest_pending_seconds"`
}

// SinkLagger is what the reporter reads of the sinks' lags, when the
// Acked it is given offers it.
type SinkLagger interface {
	SinkLagsByStream() map[record.Stream][]SinkLag
}

// InFlightState is the window in flight of a stream.
type InFlightState struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Pages int       `json:"pages_done"`
	Rows  int64     `json:"rows_done"`
}

// estimator computes backlogs and ETAs from the configuration alone, for a
// stream whose poller is not running.
type estimator struct {
	cfg    catalog.Config
	shares map[string]int // streams per functionality
	polls  map[string]int // requests a poll of each of them makes, in all (catalog.Spec.PollRequests)
}

func newEstimator(cfg catalog.Config, streams []record.Stream) *estimator {
	e := &estimator{cfg: cfg, shares: map[string]int{}, polls: map[string]int{}}
	for _, k := range streams {
		if spec, ok := catalog.LookupSpec(k.Source); ok {
			e.shares[spec.Functionality]++
			e.polls[spec.Functionality] += spec.PollRequests(cfg.Sources.Resolve(spec.Name), cfg.Edge)
		}
	}
	return e
}

func (e *estimator) planner(name string) (window.Planner, catalog.Spec, bool) {
	spec, ok := catalog.LookupSpec(name)
	if !ok {
		return window.Planner{}, spec, false
	}
	return catalog.NewPlanner(spec, e.cfg.Sources.Resolve(name), e.cfg.API, e.cfg.Edge), spec, true
}

// fill sets the backlog fields of s from its watermark and density.
func (e *estimator) fill(s *StreamState, density float64, now time.Time) {
	p, spec, ok := e.planner(s.Source)
	s.RowsLeft, s.ETASeconds = -1, -1
	if !ok {
		return
	}
	from := s.Watermark
	if from.IsZero() {
		// Never run: the first run starts at sources.<name>.start, not at
		// the history limit.
		if st, err := e.cfg.Sources.Resolve(s.Source).StartTime(now); err == nil {
			from = st
		}
	}
	b := p.Remaining(from, now, density)
	s.WindowsLeft = b.Windows
	s.CaughtUp = b.Behind <= 0
	if b.RowsKnown {
		s.RowsLeft = b.Rows
	}
	rate := e.cfg.API.Rate
	if spec.Edge {
		rate = e.cfg.Edge.Rate
	}
	perHour := float64(rate.Limit) * (1 - rate.Reserve) * float64(time.Hour) / float64(rate.Period)
	if n := e.shares[spec.Functionality]; n > 1 {
		perHour /= float64(n)
	}
	if eta, ok := p.ETA(max(s.RowsLeft, 0), b.Requests, perHour); ok && b.RowsKnown || s.CaughtUp {
		s.ETASeconds = eta.Seconds()
	}
	set := e.cfg.Sources.Resolve(s.Source)
	aside := 0.0
	if set.RecheckConfig(0).Enabled() {
		aside = set.RecheckShare
	}
	c := source.CadenceOf(set.Interval, budget.Rate{Limit: rate.Limit, Period: rate.Period, Reserve: rate.Reserve},
		aside, e.polls[spec.Functionality])
	s.CadenceSeconds, s.CadenceBound = c.Every.Seconds(), c.Bound
}

// FromCheckpoint builds the state lines of every stream of streams (those
// cfg configures) and of every other stored one, from the stored states
// at now, sorted by tenant, source and account. Streams never run show as not
// started; their backlog starts at their configured start.
func FromCheckpoint(cfg catalog.Config, stored map[record.Stream]checkpoint.State, streams []record.Stream, now time.Time) []StreamState {
	est := newEstimator(cfg, streams)
	seen := map[record.Stream]bool{}
	var out []StreamState
	add := func(k record.Stream, st checkpoint.State) {
		s := StreamState{Tenant: k.Tenant, Source: k.Source, Account: k.Account, Watermark: st.Watermark, Delivered: st.Delivered}
		if !st.Watermark.IsZero() {
			s.LagSeconds = now.Sub(st.Watermark).Seconds()
		}
		if f := st.InFlight; f != nil {
			s.InFlight = &InFlightState{Start: f.Window.Start, End: f.Window.End, Pages: f.Pages, Rows: f.Rows}
		}
		est.fill(&s, st.Density, now)
		s.Late = lateState(st.Delays, 0, 0)
		// What the stream learnt of the server's paging limits travels
		// with its cursor: state shows it with the collector stopped too.
		s.Learnt = learntState(st.Limits, 0)
		if st.Watermark.IsZero() {
			s.CaughtUp = false
		}
		out = append(out, s)
	}
	for _, k := range streams {
		seen[k] = true
		add(k, stored[k])
	}
	for k, st := range stored {
		if !seen[k] {
			add(k, st)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Tenant != out[j].Tenant {
			return out[i].Tenant < out[j].Tenant // grouped by tenant
		}
		if out[i].Source != out[j].Source {
			return out[i].Source < out[j].Source
		}
		return out[i].Account < out[j].Account
	})
	return out
}

// Print writes the state lines as a table, or as JSON.
func Print(w io.Writer, states []StreamState, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(states)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	sinks := false
	for _, s := range states {
		sinks = sinks || len(s.Sinks) > 0
	}
	header := "SOURCE\tACCOUNT\tWATERMARK\tLAG\tCADENCE\tIN FLIGHT\tDELIVERED\tWINDOWS LEFT\tETA\tRECHECKS DUE\tLAST ERROR"
	if sinks {
		header += "\tSINKS: PENDING"
	}
	fmt.Fprintln(tw, header)
	for _, s := range states {
		wm, lag := "not started", "-"
		if !s.Watermark.IsZero() {
			wm = s.Watermark.UTC().Format(time.RFC3339)
			lag = roundDuration(time.Duration(s.LagSeconds * float64(time.Second)))
		}
		inflight := "-"
		if f := s.InFlight; f != nil {
			inflight = fmt.Sprintf("%s..%s p%d", f.Start.UTC().Format("01-02T15:04"), f.End.UTC().Format("01-02T15:04"), f.Pages)
		}
		eta := "unknown"
		switch {
		case s.CaughtUp:
			eta = "caught up"
		case s.ETASeconds >= 0:
			eta = roundDuration(time.Duration(s.ETASeconds * float64(time.Second)))
		}
		errText := s.LastError
		if b := s.Blocked; b != nil {
			errText = "BLOCKED (" + b.Reason + "): " + b.Error
		}
		if errText == "" && s.Starting != "" {
			errText = "STARTING: " + s.Starting
		}
		if len(errText) > 60 {
			errText = errText[:57] + "..."
		}
		cadence := "-"
		if s.CadenceSeconds > 0 {
			cadence = roundDuration(time.Duration(s.CadenceSeconds*float64(time.Second))) + " " + s.CadenceBound
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%d\t%s", s.Source, s.Account, wm, lag, cadence, inflight, s.Delivered, s.WindowsLeft, eta, s.RecheckPending, errText)
		if sinks {
			fmt.Fprintf(tw, "\t%s", sinkLags(s.Sinks))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// sinkLags is the SINKS column: each sink's pending records, and the age
// of its oldest pending page when it has any ("siem 0, lake 1200 (3m)").
func sinkLags(ls []SinkLag) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = fmt.Sprintf("%s %d", l.Sink, l.PendingRecords)
		if l.PendingRecords > 0 {
			parts[i] += " (" + roundDuration(time.Duration(l.OldestPendingSeconds*float64(time.Second))) + ")"
		}
	}
	return strings.Join(parts, ", ")
}

func roundDuration(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%.1fd", d.Hours()/24)
	case d >= time.Hour:
		return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
	default:
		return d.Round(time.Second).String()
	}
}

// StartingHandler serves GET /state (see Live) while the collector starts,
// before its pollers run: the lines of FromCheckpoint from the states and
// window logs the checkpoint stored (nothing commits before the pollers
// run, so they are read once, by the caller), at the time of each request,
// each with Starting set to waiting() (what the start waits for). Once the
// pollers run, Reporter.Handler takes over.
func StartingHandler(cfg catalog.Config, stored map[record.Stream]checkpoint.State, windows map[record.Stream][]cursor.LoggedWindow,
	streams []record.Stream, waiting func() string) http.Handler {
	logged := func(_ context.Context, k record.Stream) ([]cursor.LoggedWindow, error) { return windows[k], nil }
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		states := FromCheckpoint(cfg, stored, streams, now)
		_ = AddRecheckPending(r.Context(), cfg, states, logged, now) // logged never fails
		why := waiting()
		for i := range states {
			states[i].Starting = why
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(states)
	})
}

// AddRecheckPending sets RecheckPending of each state line from the
// stream's stored window log (windows: each entry's stored due time) and
// its source's configured recheck points in cfg, at now.
func AddRecheckPending(ctx context.Context, cfg catalog.Config, states []StreamState, windows func(context.Context, record.Stream) ([]cursor.LoggedWindow, error), now time.Time) error {
	for i := range states {
		k := record.Stream{Tenant: states[i].Tenant, Source: states[i].Source, Account: states[i].Account}
		ws, err := windows(ctx, k)
		if err != nil {
			return err
		}
		states[i].RecheckPending = cfg.Sources.Resolve(k.Source).RecheckConfig(cfg.Edge.MaxRows).Plan().Pending(ws, now)
	}
	return nil
}

// learntState is what a stream learnt of the server's paging limits (C3)
// as state shows it, nil when it learnt nothing; splitAt is the running
// poller's split size (0 when unknown: offline).
func learntState(l window.Limits, splitAt int64) *LearntState {
	if l.PageRows <= 0 && l.NextPageTTL <= 0 && l.CountCap <= 0 && l.ChainCap <= 0 {
		return nil
	}
	return &LearntState{PageRows: l.PageRows, NextPageTTLSeconds: l.NextPageTTL.Seconds(), CountCap: l.CountCap,
		ChainCapRows: l.ChainCap, SplitAtRows: splitAt}
}
