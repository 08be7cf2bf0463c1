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
type collected map[string][]string // source -> its accounts, sorted

func newCollected(streams []record.Stream) collected {
	if len(streams) == 0 {
		return nil
	}
	c := collected{}
	for _, k := range streams {
		if !slices.Contains(c[k.Source], k.Account) {
			c[k.Source] = append(c[k.Source], k.Account)
		}
	}
	for _, a := range c {
		slices.Sort(a)
	}
	return c
}

// check says why req asks for what is not collected; nil when it is (or
// when c is nil: anything goes).
func (c collected) check(req Request) error {
	if c == nil {
		return nil
	}
	accounts, ok := c[req.Source]
	if !ok {
		sources := make([]string, 0, len(c))
		for s := range c {
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
