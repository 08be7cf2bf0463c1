// Package suggest finds what a user meant by a name that is not known: the
// known name closest to it, for the did-you-mean of configuration keys,
// command-line flags and tapped streams.
package suggest

import "strings"

// MaxEdits is how far a name may be from the one meant: two edits (a
// typo, a swapped or missing letter: dsn for dns, ofline for offline).
const MaxEdits = 2

// Closest returns the one of names closest to name, compared without
// case, within MaxEdits edits; "" when none is. The first of equally
// close names wins.
func Closest(name string, names []string) string {
	best, bestD := "", MaxEdits+1
	for _, n := range names {
		if d := Distance(strings.ToLower(name), strings.ToLower(n)); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// Distance is the Levenshtein distance of a and b, in bytes.
func Distance(a, b string) int {
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
