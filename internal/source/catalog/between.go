package catalog

import (
	"cmp"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// checkBetween checks the boundaries of a between filter whose form
// (validate) is right: the seed says "the upper boundary must be greater
// than the lower one", so a lower boundary above the upper one, or equal
// to it, is refused (the API would answer every window with 400, C5).
// The boundaries compare as numbers when both are decimal numbers, as
// instants when both are times in one of the seed's forms (C3); other
// values (text, addresses, versions), whose order only the API knows,
// are refused only when they are equal.
func (f Filter) checkBetween() error {
	if f.Expression != "between" || len(f.Values) != 2 {
		return nil
	}
	lo, hi := f.Values[0], f.Values[1]
	if c, known := compareBounds(lo, hi); known && c >= 0 {
		return fmt.Errorf("between's upper boundary %q must be greater than its lower one %q (seed: filter expressions)", hi, lo)
	}
	return nil
}

// decimal is a number as a filter value writes one: no hex, no Inf, no NaN.
var decimal = regexp.MustCompile(`^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$`)

// boundTimeLayouts are the seed's time forms: date, date and hour,
// seconds, milliseconds (RFC 3339 reads both of the last two).
var boundTimeLayouts = []string{time.DateOnly, "2006-01-02T15", time.RFC3339Nano}

// compareBounds compares a and b as numbers or as times, and says whether
// it could; strings that are neither compare only when equal.
func compareBounds(a, b string) (int, bool) {
	ta, tb := strings.TrimSpace(a), strings.TrimSpace(b)
	if decimal.MatchString(ta) && decimal.MatchString(tb) {
		x, errA := strconv.ParseFloat(ta, 64)
		y, errB := strconv.ParseFloat(tb, 64)
		if errA == nil && errB == nil {
			return cmp.Compare(x, y), true
		}
	}
	if x, ok := boundTime(ta); ok {
		if y, ok := boundTime(tb); ok {
			return x.Compare(y), true
		}
	}
	if a == b {
		return 0, true
	}
	return 0, false
}

// boundTime reads s in one of the seed's time forms.
func boundTime(s string) (time.Time, bool) {
	for _, layout := range boundTimeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
