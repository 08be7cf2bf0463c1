package source

import (
	"time"

	"github.com/svcexport/collector/internal/api/budget"
)

// The cadence of a stream: how often it asks for its newest records once
// it caught up (a stream that is behind walks its backlog as fast as the
// budget allows, whatever its cadence). With sources.*.interval: auto
// (the default) it is learnt from the budget (C4): the stream's bucket of
// (user, functionality) refills limit*(1-reserve) tokens a period, of
// which rechecks of older windows may spend recheck_share*limit; the
// rest is shared by the polls of the streams that spend the bucket
// (accounts x sources of the functionality, counted by the
// recheck.Limiter they share, Share), each by the requests one of its
// polls makes (catalog.Spec.PollRequests: 1, and for edge_alerts 1 more
// per max_window of edge.alert_update_lookback, C6). Every stream of a
// bucket polls once every
//
//	period / ((limit*(1-reserve) - recheck_share*limit) / requests)
//
// where requests is what one poll of every stream of the bucket asks in
// all (budget.Rate.Pace), never more often than MinCadence: the polls
// spend what the budget leave them, not more. The limit is the server's
// RateLimit-Limit once an answer said one, so a server that lowers it
// slows every stream of the bucket at their next step. A configuration
// reload that adds or drops streams of a functionality changes the
// count of its limiter, and every stream of it follows at its next step
// (Set.Update). A configured interval is kept as it is.

// MinCadence is the floor of a cadence learnt from the budget: a stream
// never polls more often than this, however large its share. A poll
// costs at least one request and a little work in every sink; below
// about a quarter of a minute, fresher polls buy little against the
// platform's own delays.
const MinCadence = 15 * time.Second

// What bounds a stream's cadence (Cadence.Bound, the label bound of
// collector_poll_cadence_bound).
const (
	// CadenceBudget: the stream's share of its budget (interval: auto).
	CadenceBudget = "budget"
	// CadenceFloor: MinCadence, the share would allow more (interval:
	// auto).
	CadenceFloor = "floor"
	// CadenceConfigured: a configured interval.
	CadenceConfigured = "configured"
)

// CadenceBounds returns every value of Cadence.Bound.
func CadenceBounds() []string { return []string{CadenceBudget, CadenceFloor, CadenceConfigured} }

// Cadence is how often a caught-up stream polls, and what sets it.
type Cadence struct {
	// Every is the time from one poll of the stream's newest records to
	// the next.
	Every time.Duration
	// Bound is one of CadenceBounds.
	Bound string
}

// CadenceOf is the cadence of a stream configured with interval (0:
// auto) whose bucket is rate, of which aside is kept for rechecks,
// shared by streams whose polls make requests requests in all (a poll of
// each of them). A running poller reckons with what its bucket learnt
// (Snapshot.Cadence); the state of a stopped collector with the
// configuration.
func CadenceOf(interval time.Duration, rate budget.Rate, aside float64, requests int) Cadence {
	if interval > 0 {
		return Cadence{Every: interval, Bound: CadenceConfigured}
	}
	every := rate.Pace(aside, max(requests, 1))
	if every < MinCadence {
		return Cadence{Every: MinCadence, Bound: CadenceFloor}
	}
	return Cadence{Every: every, Bound: CadenceBudget}
}

// pace computes the stream's cadence as its bucket stands (its learnt
// limit, the streams that share it) and publishes it: to the Snapshot,
// to collector_poll_cadence_seconds, and to the stream's rechecks, which
// run in the wait between polls and sweep at most once a poll
// (recheck.Limiter.Cadence takes it as its interval). The limiter follows
// the bucket's limit too, so that the recheck share is of the limit the
// server says. Run calls it before every step.
func (p *Poller) pace() Cadence {
	rate := p.c.Rate(p.cfg.Spec.Functionality)
	aside, requests := 0.0, p.cfg.pollRequests()
	if l := p.cfg.RecheckLimiter; l != nil {
		l.SetRate(rate.Limit, rate.Period)
		aside, requests = l.Aside(), max(l.Requests(), requests)
	}
	c := CadenceOf(p.cfg.Settings.Interval, rate, aside, requests)
	p.st.SetCadence(c)
	p.m.Cadence(p.cfg.Spec.Name, p.cfg.Account, c)
	p.rv.cfg.Settings.Interval = c.Every
	return c
}

// cadence is the stream's cadence as last paced.
func (p *Poller) cadence() time.Duration {
	return p.st.Cadence().Every
}
