package apisim

import (
	"go/parser"
	"go/token"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The window permutation is a bijection of [0, n) for every n.
func TestPermutationIsABijection(t *testing.T) {
	for _, n := range []uint64{0, 1, 2, 3, 4, 5, 15, 16, 17, 1000, 4095, 4097, 65537, 300001} {
		p := newPerm(n, 42+n)
		seen := make([]bool, n)
		moved := 0
		for j := uint64(0); j < n; j++ {
			x := p.at(j)
			if x >= n || seen[x] {
				t.Fatalf("n=%d: at(%d)=%d repeats or leaves the domain", n, j, x)
			}
			seen[x] = true
			if x != j {
				moved++
			}
		}
		if n >= 16 && moved < int(n)/2 {
			t.Fatalf("n=%d: only %d of %d positions moved", n, moved, n)
		}
	}
}

// A plan's locate agrees with its natural order, in minute and in hour
// mode, with windows cut inside minutes.
func TestPlanLocateMatchesNaturalOrder(t *testing.T) {
	_, streams := testStreams(t)
	st := streams[srcAuditLogs] // 200 an hour: a long window stays small
	now := testNow.UnixMilli()
	for _, w := range []struct{ start, end int64 }{
		{now - 3600_000 + 1234, now - 17},
		{now - 59_000, now - 1_000},         // inside one minute
		{now - 60*86400_000 - 5, now - 321}, // over minuteLimit minutes: hour mode
	} {
		pl := newPlan(st, w.start, w.end)
		if (pl.mpre == nil) != (w.end-w.start > minuteLimit*60000) {
			t.Fatalf("mode: minute prefix %v for %d minutes", pl.mpre != nil, (w.end-w.start)/60000)
		}
		var r int64
		pl.each(pl.m0, pl.m1, func(m int64, i uint32, key uint64, tm int64) bool {
			if tm < w.start || tm >= w.end {
				t.Fatalf("record at %d outside [%d, %d)", tm, w.start, w.end)
			}
			if lm, li := pl.locate(r); lm != m || li != i {
				t.Fatalf("locate(%d) = (%d, %d), want (%d, %d)", r, lm, li, m, i)
			}
			r++
			return true
		})
		if r != pl.n || r == 0 {
			t.Fatalf("natural order has %d records, plan says %d", r, pl.n)
		}
	}
}

// The volume follows the configured rate: about rate rows an hour over a
// day, with the wave and bursts around it.
func TestVolumeFollowsTheRate(t *testing.T) {
	_, streams := testStreams(t)
	st := streams[srcDNS] // 15,000 an hour
	now := testNow.UnixMilli()
	pl := newPlan(st, now-7*86400_000, now)
	perHour := float64(pl.n) / (7 * 24)
	if perHour < 15000*0.9 || perHour > 15000*1.5 {
		t.Fatalf("%.0f rows an hour, configured 15000", perHour)
	}
}

// appendISO writes what time.Format writes, for any millisecond.
func TestAppendISOMatchesTimeFormat(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for k := 0; k < 100000; k++ {
		ms := rng.Int64N(4102444800000) // 1970 .. 2100
		want := time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
		if got := string(appendISO(nil, ms, false)); got != want {
			t.Fatalf("%d: %s, want %s", ms, got, want)
		}
	}
	if got := string(appendISO(nil, 0, true)); got != "1970-01-01T00:00:00.000+0000" {
		t.Fatal(got)
	}
}

// C3: only the seconds and milliseconds forms are search times.
func TestParseAPITime(t *testing.T) {
	ok := map[string]time.Time{
		"2026-11-20T10:00:00Z":     time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC),
		"2026-11-20T10:00:00.123Z": time.Date(2026, 11, 20, 10, 0, 0, 123e6, time.UTC),
		"2024-02-29T23:59:59.999Z": time.Date(2024, 2, 29, 23, 59, 59, 999e6, time.UTC),
	}
	for s, want := range ok {
		if got, err := parseAPITime(s); err != nil || !got.Equal(want) {
			t.Errorf("%s: %v %v", s, got, err)
		}
	}
	for _, s := range []string{"", "2026-11-20", "2026-11-20T10", "2026-11-20T10:00Z", "2026-11-20T10:00:00",
		"2026-11-20T10:00:00.1Z", "2026-11-20T10:00:00.1234Z", "2026-11-20T10:00:00+00:00", "2026-11-20T10:00:00.000+0000",
		"2026-11-20 10:00:00Z", "2026-13-20T10:00:00Z", "2025-02-29T10:00:00Z", "2026-11-20T24:00:00Z", "+026-11-20T10:00:00Z",
		"2026-11-20t10:00:00z", "2026-11-20T10:00:00.12xZ"} {
		if _, err := parseAPITime(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

// Config.Validate names the key of every bad value.
func TestConfigValidate(t *testing.T) {
	d := DefaultConfig()
	if err := d.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	cases := map[string]func(*Config){
		"apisim.page_size":       func(c *Config) { c.PageSize = 0 },
		"apisim.result_cap":      func(c *Config) { c.ResultCap = 10 },
		"apisim.accounts":        func(c *Config) { c.Accounts = []string{"acme", "ACME"} },
		"apisim.keys[0].role":    func(c *Config) { c.Keys[0].Role = "root" },
		"apisim.keys[1].account": func(c *Config) { c.Keys[1].Account = "globex" },
		"apisim.rates":           func(c *Config) { c.Rates["nosuch"] = 1 },
		"apisim.error_rate":      func(c *Config) { c.ErrorRate = 2 },
		"apisim.noisy_fraction":  func(c *Config) { c.NoisyFraction = 1 },
		"apisim.wave_amplitude":  func(c *Config) { c.WaveAmplitude = 1 },
		"apisim.late_max":        func(c *Config) { c.LateMax = -1 },
		"apisim.rate_period":     func(c *Config) { c.RatePeriod = 0 },
	}
	for key, mutate := range cases {
		c := DefaultConfig()
		mutate(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: %v", key, err)
		}
		if _, err := New(c); err == nil {
			t.Errorf("%s: New accepted the config", key)
		}
	}
}

// doc.go: the simulator imports no internal package but internal/record
// (STYLE 1: boundaries a test can hold).
func TestImportsOnlyRecordOfTheProject(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, "github.com/svcexport/collector/") && p != "github.com/svcexport/collector/internal/record" {
				t.Errorf("%s imports %s", f, p)
			}
			if strings.Contains(strings.SplitN(p, "/", 2)[0], ".") && !strings.HasPrefix(p, "github.com/svcexport/collector/") {
				t.Errorf("%s imports the third-party package %s", f, p)
			}
		}
	}
}
