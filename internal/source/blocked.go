package source

import (
	"fmt"
	"strings"

	"github.com/svcexport/collector/internal/api"
)

// blocking returns the reason a poll error blocks its stream
// (api.PermanentReason: the label reason of collector_stream_blocked and
// Snapshot.BlockedReason), and false for an error a plain retry may cure.
func blocking(err error) (string, bool) { return api.PermanentReason(err) }

// maxBlockedMessage bounds the error kept in a Snapshot.
const maxBlockedMessage = 300

// block marks the stream blocked for reason by err (already scrubbed of
// credentials by the client), for the metrics, the Snapshot and /readyz.
// It reports whether the stream was not blocked for that reason before.
func (p *Poller) block(reason string, err error) bool {
	msg := err.Error()
	if len(msg) > maxBlockedMessage {
		msg = msg[:maxBlockedMessage] + "..."
	}
	prev, was := p.st.Block(reason, msg, p.clk.Now)
	if was && prev != reason {
		p.m.Blocked(p.cfg.Spec.Name, p.cfg.Account, prev, false)
	}
	p.m.Blocked(p.cfg.Spec.Name, p.cfg.Account, reason, true)
	return !was || prev != reason
}

// unblock clears a block after a poll went through.
func (p *Poller) unblock() {
	reason, was := p.st.Unblock()
	if was {
		p.m.Blocked(p.cfg.Spec.Name, p.cfg.Account, reason, false)
		p.log.Info("stream no longer blocked: its requests go through again", "reason", reason)
	}
}

// BlockedError returns nil when no poller is blocked, else an error that
// lists every blocked stream with its reason and scrubbed error, for
// /readyz: those streams keep failing with errors that repeating the same
// request cannot cure, and are only asked again at
// api.permanent_error_retry.
func BlockedError(pollers []*Poller) error {
	var lines []string
	for _, p := range pollers {
		s := p.Snapshot()
		if !s.Blocked {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s: %s: %s", s.Stream, s.BlockedReason, s.BlockedError))
	}
	if len(lines) == 0 {
		return nil
	}
	return fmt.Errorf("%d streams blocked by errors a retry cannot cure (asked again every api.permanent_error_retry): %s",
		len(lines), strings.Join(lines, "; "))
}
