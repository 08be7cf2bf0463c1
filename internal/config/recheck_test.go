package config

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/source/catalog"
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
	if !slices.Equal(c.Recheck, catalog.FixedPoints(2*time.Minute, 10*time.Minute)) || c.RecheckShare != 0.2 || c.RecheckHorizon != time.Hour {
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

// recheck: auto is the default and may be written in the file or the
// environment; "auto" mixed with points exits naming the key; a bad point
// echoes itself.
func TestLoadWith_RecheckAuto(t *testing.T) {
	p := writeFile(t, validBase+"sources:\n  dns:\n    recheck: auto\n  connections:\n    recheck: [1m, 1d]\n")
	l, err := LoadWith(p, []string{"COLLECTOR_SOURCES__USER_LOGINS__RECHECK=auto"}, LoadOptions{Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	src := l.Config.SourceConfig().Sources
	for _, name := range []string{"dns", "user_logins", "audit_logs"} { // audit_logs: the default
		if c := src.Resolve(name).RecheckConfig(0); !c.Auto {
			t.Errorf("%s: %+v, want auto", name, c)
		}
	}
	if c := src.Resolve("connections").RecheckConfig(0); c.Auto || !slices.Equal(c.Offsets, []time.Duration{time.Minute, 24 * time.Hour}) {
		t.Errorf("connections: %+v, want [1m, 24h]", c)
	}
	bad := writeFile(t, validBase+"sources:\n  dns:\n    recheck: [auto, 1h]\n")
	if _, err := LoadWith(bad, nil, LoadOptions{Offline: true}); err == nil || !strings.Contains(err.Error(), "sources.dns.recheck:") {
		t.Fatalf("auto mixed with a point: %v", err)
	}
	bad = writeFile(t, validBase+"sources:\n  dns:\n    recheck: [1h, soon]\n")
	if _, err := LoadWith(bad, nil, LoadOptions{Offline: true}); err == nil || !strings.Contains(err.Error(), "soon") {
		t.Fatalf("a bad point: %v", err)
	}
}
