package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// sources.*.recheck: a list of durations, inherited from the default
// block, [] turning rechecks off for one source; a bad point exits naming
// its key.
func TestLoadWith_RecheckKeys(t *testing.T) {
	p := writeFile(t, validBase+`sources:
  default:
    recheck: [2m, 10m]
    recheck_share: 0.2
  dns:
    recheck: []
  connections:
    recheck_horizon: 1h
`)
	l, err := LoadWith(p, nil, LoadOptions{Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	src := l.Config.SourceConfig().Sources
	if got := src.Resolve("dns").Recheck; len(got) != 0 {
		t.Errorf("dns recheck = %v, want off", got)
	}
	c := src.Resolve("connections")
	if !slices.Equal(c.Recheck, []time.Duration{2 * time.Minute, 10 * time.Minute}) || c.RecheckShare != 0.2 || c.RecheckHorizon != time.Hour {
		t.Errorf("connections = %+v", c)
	}
	bad := writeFile(t, validBase+"sources:\n  dns:\n    recheck: [1h, 30m]\n")
	if _, err := LoadWith(bad, nil, LoadOptions{Offline: true}); err == nil || !strings.Contains(err.Error(), "sources.dns.recheck:") {
		t.Fatalf("descending points: %v", err)
	}
	bad = writeFile(t, validBase+"sources:\n  default:\n    recheck_share: 0\n")
	if _, err := LoadWith(bad, nil, LoadOptions{Offline: true}); err == nil || !strings.Contains(err.Error(), "sources.default.recheck_share:") {
		t.Fatalf("share 0: %v", err)
	}
}
