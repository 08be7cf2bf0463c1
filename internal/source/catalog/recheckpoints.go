package catalog

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/svcexport/collector/internal/recheck"
)

// RecheckPoint is one element of sources.*.recheck: a duration after a
// window's end, or RecheckAuto, which stands alone ("recheck: auto": the
// points are learnt from the platform's delays, recheck.Config.Learnt).
type RecheckPoint time.Duration

// RecheckAuto is the point "auto".
const RecheckAuto RecheckPoint = -1

// AutoPoints is the value of "recheck: auto", the default.
func AutoPoints() []RecheckPoint { return []RecheckPoint{RecheckAuto} }

// FixedPoints returns ds as recheck points.
func FixedPoints(ds ...time.Duration) []RecheckPoint {
	out := make([]RecheckPoint, len(ds))
	for i, d := range ds {
		out[i] = RecheckPoint(d)
	}
	return out
}

// UnmarshalText reads "auto" or a duration ("90m", "6h", "1d").
func (p *RecheckPoint) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	if strings.EqualFold(s, "auto") {
		*p = RecheckAuto
		return nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return fmt.Errorf("invalid recheck point %q (write auto, or e.g. 1m, 6h, 1d)", s)
		}
		*p = RecheckPoint(time.Duration(n) * 24 * time.Hour)
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid recheck point %q (write auto, or e.g. 1m, 6h, 1d)", s)
	}
	*p = RecheckPoint(d)
	return nil
}

// MarshalText writes "auto" or the duration.
func (p RecheckPoint) MarshalText() ([]byte, error) {
	if p == RecheckAuto {
		return []byte("auto"), nil
	}
	return []byte(time.Duration(p).String()), nil
}

// String is MarshalText's text.
func (p RecheckPoint) String() string {
	b, _ := p.MarshalText()
	return string(b)
}

// isAuto reports whether ps says "auto".
func isAuto(ps []RecheckPoint) bool { return len(ps) == 1 && ps[0] == RecheckAuto }

// recheckConfig is the recheck configuration of points ps (validated by
// validatePoints): learnt for auto, fixed for a list, off for none.
func recheckConfig(ps []RecheckPoint) recheck.Config {
	c := recheck.DefaultConfig()
	if isAuto(ps) {
		return c
	}
	c.Auto = false
	c.Offsets = make([]time.Duration, len(ps))
	for i, p := range ps {
		c.Offsets[i] = time.Duration(p)
	}
	return c
}

// validatePoints says what is wrong with ps beyond what recheck.Config
// checks: "auto" mixed with points.
func validatePoints(ps []RecheckPoint) error {
	if len(ps) > 1 {
		for _, p := range ps {
			if p == RecheckAuto {
				return fmt.Errorf("recheck: auto stands alone (write recheck: auto, or a list of points)")
			}
		}
	}
	return nil
}
