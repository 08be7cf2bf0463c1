package file

import (
	"slices"
	"testing"
	"time"
)

func TestEscapedNamesCannotLeaveTheirDirectory(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"dns":         "dns",
		"acme-corp_1": "acme-corp_1",
		"v1.2":        "v1.2",
		"..":          "%2E.",
		".hidden":     "%2Ehidden",
		"../etc":      "%2E.%2Fetc",
		"a/b":         "a%2Fb",
		"Ünïcode 50%": "%C3%9Cn%C3%AFcode%2050%25",
		"tab\there":   "tab%09here",
		`back\slash`:  "back%5Cslash",
	}
	for in, want := range tests {
		if got := escapeName(in); got != want {
			t.Errorf("escapeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFileNamesRoundTripAndSortInWritingOrder(t *testing.T) {
	t.Parallel()
	prefix := "dns-acme-corp-"
	t0 := time.Date(2026, 11, 22, 15, 30, 0, 123e6, time.UTC)
	names := []fileName{
		{stamp: t0, seq: 1},
		{stamp: t0, seq: 2, gzip: true},
		{stamp: t0.Add(time.Millisecond), seq: 3, gzip: true, part: true},
		{stamp: t0.Add(time.Hour), seq: 4},
	}
	var formatted []string
	for _, n := range names {
		s := n.format(prefix)
		got, ok := parseFileName(prefix, s)
		if !ok || got != n {
			t.Errorf("parse(%q) = %+v, %v; want %+v", s, got, ok, n)
		}
		formatted = append(formatted, s)
	}
	if formatted[0] != "dns-acme-corp-20261122T153000.123Z-000001.ndjson" {
		t.Errorf("name = %q", formatted[0])
	}
	if !slices.IsSorted(formatted) {
		t.Errorf("names do not sort in writing order: %q", formatted)
	}
	for _, bad := range []string{"dns-acme-corp-x.ndjson", "dns-other-20261122T153000.123Z-000001.ndjson", ".lock", "dns-acme-corp-20261122T153000.123Z-000001.txt", "dns-acme-corp-20261122T153000.123Z-.ndjson"} {
		if _, ok := parseFileName(prefix, bad); ok {
			t.Errorf("parseFileName accepted %q", bad)
		}
	}
}
