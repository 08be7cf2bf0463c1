package expand

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// quoteCases are values a printed configuration must give back as they
// are (issue 20, item 5): dollars before and away from braces, references
// that must stay text, and what YAML quotes.
var quoteCases = []string{
	"", "$", "$$", "${", "$${", "$$${", "$}", "{$}", "${}", "a$", "$a", "${X}", "$${X}", "$$${X}",
	"${file:/etc/passwd}", "$${file:/etc/passwd}", "pre ${HOME} post", "${env:HOME}", "${A:-b}",
	"price-$$5-${LITERAL}", "line1\nline2 ${X}\n", "\"${X}\"", "'${X}'", `back\slash\${X}`,
	"ünïcødé ${日本}", "tab\t${X}\r\n", "${${X}}", "}${", "$ {X}",
}

// Quote's result expands back to its argument, whatever it holds.
func TestQuoteExpandsBackToItself(t *testing.T) {
	t.Parallel()
	e := newExpander([]string{"X=expanded", "HOME=/root"}, nil)
	check := func(s string) {
		t.Helper()
		got, err := e.expand(Quote(s), false)
		if err != nil || got != s {
			t.Errorf("Quote(%q) = %q expands to %q, %v", s, Quote(s), got, err)
		}
	}
	for _, s := range quoteCases {
		check(s)
	}
	// A fuzz-ish table: strings from the characters that matter.
	r := rand.New(rand.NewPCG(20, 5))
	alphabet := []string{"$", "$", "{", "}", "a", "file:", ":-", "\\", "\"", "\n", "é", " "}
	for range 2000 {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		check(b.String())
	}
}

func FuzzQuote(f *testing.F) {
	for _, s := range quoteCases {
		f.Add(s)
	}
	e := newExpander(nil, nil)
	f.Fuzz(func(t *testing.T, s string) {
		if got, err := e.expand(Quote(s), false); err != nil || got != s {
			t.Fatalf("Quote(%q) = %q expands to %q, %v", s, Quote(s), got, err)
		}
	})
}
