package status

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/svcexport/collector/internal/source"
)

// DefaultFailingAfter is the shortest time a stream must have failed
// without a commit before FailingError names it, unless SetFailingAfter
// says otherwise (metrics.failing_after): a retry or two after a blip is
// not a failing stream.
const DefaultFailingAfter = 10 * time.Minute

// SetFailingAfter sets the shortest time a stream must have failed without
// a commit before FailingError names it (default DefaultFailingAfter). Call
// it before the reporter runs.
func (p *Reporter) SetFailingAfter(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failingAfter = d
}

// failingFor is how long a stream polled every cadence may go without a
// commit while its polls fail before FailingError names it: three of its
// polls, at least the reporter's failing-after time. A healthy stream
// commits at least once a poll (a caught-up poll moves its watermark).
func (p *Reporter) failingFor(cadence time.Duration) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return max(p.failingAfter, 3*cadence)
}

// FailingError returns nil unless some stream keeps failing: its polls
// fail (its latest error came after its latest commit) and it has not
// committed for failingFor, or never since the collector started that
// long ago. It names each such stream with its latest error, scrubbed of
// credentials like every poller error, for /readyz. Streams blocked by an
// error a retry cannot cure are source.BlockedError's, not named here.
func (p *Reporter) FailingError(now time.Time) error { return p.failingError(p.current(), now) }

// failingError is FailingError of pollers.
func (p *Reporter) failingError(pollers []*source.Poller, now time.Time) error {
	acked := p.acked.States()
	var lines []string
	for _, pl := range pollers {
		k := pl.Stream()
		snap := pl.Snapshot()
		if snap.Blocked || snap.Errors == 0 {
			continue
		}
		since := acked[k].Updated
		if since.IsZero() || since.Before(p.started) {
			since = p.started
		}
		if !snap.LastErrorAt.After(since) || now.Sub(since) < p.failingFor(snap.Cadence.Every) {
			continue
		}
		msg := snap.LastError
		if len(msg) > maxFailingMessage {
			msg = msg[:maxFailingMessage] + "..."
		}
		lines = append(lines, fmt.Sprintf("%s: no commit for %s, polls failing: %s", k, roundDuration(now.Sub(since)), msg))
	}
	if len(lines) == 0 {
		return nil
	}
	return fmt.Errorf("%d streams keep failing: %s", len(lines), strings.Join(lines, "; "))
}

// maxFailingMessage bounds each stream's error in FailingError.
const maxFailingMessage = 200

// BlockedError is source.BlockedError of the pollers reported now, for
// /readyz.
func (p *Reporter) BlockedError() error { return source.BlockedError(p.current()) }

// TenantErrors returns, for every tenant of the streams reported now
// (record.TenantLabel names the one-tenant form), BlockedError and
// FailingError of its streams alone, nil for a tenant none of whose
// streams is blocked or failing: what /readyz of a collector of tenants
// says of each (docs/tenants.md).
func (p *Reporter) TenantErrors(now time.Time) map[string]error {
	by := map[string][]*source.Poller{}
	for _, pl := range p.current() {
		t := pl.Stream().TenantName()
		by[t] = append(by[t], pl)
	}
	out := make(map[string]error, len(by))
	for t, pls := range by {
		out[t] = errors.Join(source.BlockedError(pls), p.failingError(pls, now))
	}
	return out
}
