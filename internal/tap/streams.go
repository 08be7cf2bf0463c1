package tap

import (
	"fmt"
	"slices"
	"strings"

	"github.com/svcexport/collector/internal/record"
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
// name, within two edits (a typo, a swapped letter, dsn for dns), else "".
func didYouMean(name string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(strings.ToLower(name), strings.ToLower(n)); d < bestD {
			best, bestD = n, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
