package tap

import (
	"fmt"
	"slices"
	"strings"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/suggest"
)

// collected is what the collector reads, source by source: a tap for
// anything else is refused at once, naming what is collected, instead of
// waiting for envelopes that never come.
type collected struct {
	sources map[string][]string // source -> its accounts, sorted; nil: anything
	tenants []string            // the configured tenants, sorted; none in the one-tenant form
}

func newCollected(streams []record.Stream) collected {
	if len(streams) == 0 {
		return collected{}
	}
	c := collected{sources: map[string][]string{}}
	for _, k := range streams {
		if !slices.Contains(c.sources[k.Source], k.Account) {
			c.sources[k.Source] = append(c.sources[k.Source], k.Account)
		}
		if k.Tenant != "" && !slices.Contains(c.tenants, k.Tenant) {
			c.tenants = append(c.tenants, k.Tenant)
		}
	}
	for _, a := range c.sources {
		slices.Sort(a)
	}
	slices.Sort(c.tenants)
	return c
}

// check says why req asks for what is not collected; nil when it is (or
// when c is nil: anything goes).
func (c collected) check(req Request) error {
	if c.sources == nil {
		return nil
	}
	if req.Tenant != "" && !slices.Contains(c.tenants, req.Tenant) {
		if len(c.tenants) == 0 {
			return fmt.Errorf("tenant %q: this collector has no tenants (tap without --tenant)", req.Tenant)
		}
		return fmt.Errorf("tenant %q is not a tenant of this collector%s; its tenants: %s",
			req.Tenant, didYouMean(req.Tenant, c.tenants), strings.Join(c.tenants, ", "))
	}
	accounts, ok := c.sources[req.Source]
	if !ok {
		sources := make([]string, 0, len(c.sources))
		for s := range c.sources {
			sources = append(sources, s)
		}
		slices.Sort(sources)
		return fmt.Errorf("source %q is not collected by this collector%s; it collects: %s",
			req.Source, didYouMean(req.Source, sources), strings.Join(sources, ", "))
	}
	if req.Account != "" && !slices.Contains(accounts, req.Account) {
		return fmt.Errorf("account %q of source %q is not collected by this collector%s; its accounts: %s",
			req.Account, req.Source, didYouMean(req.Account, accounts), strings.Join(accounts, ", "))
	}
	return nil
}

// didYouMean is ` (did you mean "X"?)` for the one of names closest to
// name (package suggest), else "".
func didYouMean(name string, names []string) string {
	best := suggest.Closest(name, names)
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}
