package app

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/svcexport/collector/internal/config"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/window"
)

// startWarnings are check's warnings of cfg's sources.*.start values that
// reach further back than api.max_history (C3): run starts those streams at
// the oldest time the API serves and logs it once per stream, so check
// says it once per key, before run does (issue 24).
func startWarnings(cfg catalog.Config, now time.Time) []string {
	p := window.Planner{MaxHistory: cfg.API.MaxHistory}
	maxHistory := cfg.API.MaxHistory
	if maxHistory <= 0 {
		maxHistory = window.DefaultMaxHistory
	}
	var out []string
	for _, name := range slices.Sorted(mapKeys(cfg.Sources)) {
		o := cfg.Sources[name]
		if o.Start == nil {
			continue
		}
		floor, clamped, err := p.Start(*o.Start, now)
		if err != nil || !clamped {
			continue
		}
		out = append(out, fmt.Sprintf("sources.%s.start: %q reaches further back than api.max_history (%s); "+
			"run starts those streams at the oldest time the API serves, %s, and skips the older part",
			name, *o.Start, days(maxHistory), floor.UTC().Format(time.RFC3339)))
	}
	return out
}

func mapKeys(m catalog.SourcesConfig) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// days writes d in days when it is a whole number of them ("92d").
func days(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}

// tapWarnings are check's warnings of an open /tap (metrics.tap), which
// hands every record the collector delivers to whoever may read it. On
// without a token on an address other than loopback, the configuration
// does not load (config.Config.Validate: the records would be everyone's
// who reaches the port); what loads but deserves a word: a token sent in
// clear over the network (the telemetry server has no TLS), and no token
// on loopback, where every process of the host (or of the pod) reads.
func tapWarnings(mc config.MetricsConfig) []string {
	t := mc.Tap
	if !t.Enabled || mc.Listen == "" {
		return nil
	}
	loopback := config.IsLoopback(mc.Listen)
	switch {
	case t.TokenFile == "" && !loopback:
		// Refused by Validate; said here too should that ever change.
		return []string{fmt.Sprintf("metrics.tap: /tap is on without a token on %s, not a loopback address: whoever reaches the port reads every record (set metrics.tap.token_file)", mc.Listen)}
	case t.TokenFile == "":
		return []string{fmt.Sprintf("metrics.tap: /tap is on without a token on %s: every process of this host (of this pod, in Kubernetes) can read every record; set metrics.tap.token_file to ask for a token", mc.Listen)}
	case !loopback:
		return []string{fmt.Sprintf("metrics.tap: /tap is on at %s, not a loopback address: its token and the records it streams cross the network in clear (the telemetry server has no TLS); "+
			"restrict who reaches the port (a NetworkPolicy: the Helm chart's networkPolicy) or turn the tap off when done", mc.Listen)}
	}
	return nil
}

// printWarnings writes each warning on a "warn" line of check's report.
func printWarnings(w io.Writer, warnings []string) {
	for _, s := range warnings {
		fmt.Fprintf(w, "warn  %s\n", s)
	}
}

// configSummary is online check's short account of the configuration (the
// whole of it is behind check --print): where the data comes from and
// goes, one line each.
func configSummary(w io.Writer, cfg config.Config, src catalog.Config, streams int) {
	fmt.Fprintf(w, "# configuration (check --print shows all of it, secrets redacted)\n")
	if src.API.BaseURL != "" {
		fmt.Fprintf(w, "#   core API  %s (accounts: %d, rate: %d per %s)\n", redactedURL(src.API.BaseURL), max(len(src.Accounts), 1), rateLimit(src), ratePeriod(src))
	}
	if src.Edge.BaseURL != "" {
		fmt.Fprintf(w, "#   edge API  %s\n", redactedURL(src.Edge.BaseURL))
	}
	fmt.Fprintf(w, "#   streams   %d\n", streams)
	var sinks []string
	for _, sc := range cfg.Sinks() {
		s := sc.SinkName()
		if s != sc.Type {
			s += " (" + sc.Type + ")"
		}
		sinks = append(sinks, s)
	}
	fmt.Fprintf(w, "#   sinks     %s\n", strings.Join(sinks, ", "))
	fmt.Fprintf(w, "#   checkpoint %s\n", cfg.Checkpoint.Path)
}

func rateLimit(src catalog.Config) int {
	if src.API.Rate.Limit > 0 {
		return src.API.Rate.Limit
	}
	return 480
}

func ratePeriod(src catalog.Config) time.Duration {
	if src.API.Rate.Period > 0 {
		return src.API.Rate.Period
	}
	return time.Hour
}

// countingTransport counts the requests made through it, by path: check
// says how many of the API's budgets (C4: one bucket per functionality,
// the token endpoint's and each search's) it spent.
type countingTransport struct {
	next   http.RoundTripper
	mu     sync.Mutex
	byPath map[string]int
}

// RoundTrip counts req and sends it on.
func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	if c.byPath == nil {
		c.byPath = map[string]int{}
	}
	c.byPath[req.URL.Path]++
	c.mu.Unlock()
	return c.next.RoundTrip(req)
}

// summary is the line check ends with: the requests spent, and of which
// buckets (C4), each of rate requests per period.
func (c *countingTransport) summary(rate int, period time.Duration) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	total, token, most := 0, 0, 0
	for p, n := range c.byPath {
		total += n
		if strings.HasSuffix(p, "/access/tokens") {
			token += n
			continue
		}
		most = max(most, n)
	}
	buckets := len(c.byPath)
	if token > 0 {
		buckets--
	}
	return fmt.Sprintf("# check spent %d API requests: %d of the token endpoint's bucket, at most %d of each of %d search buckets "+
		"(C4: %d per %s each, shared by every client of the API user, a running collector too)",
		total, token, most, buckets, rate, period)
}
