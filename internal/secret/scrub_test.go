package secret

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// A secret with characters that every encoding changes: so each derived
// form differs from the plain one.
const awkward = `p@ss w/rd+&=é"<x>\%`

func TestScrubberRemovesEveryFormOfASecret(t *testing.T) {
	t.Parallel()
	s := NewScrubber(New(awkward), New("  padded-in-its-file \n"))
	s.AddBasic("client id", New(awkward))
	jsonHTML, _ := json.Marshal(awkward)
	for _, tt := range []struct{ name, form string }{
		{"plain", awkward},
		{"form body (url.QueryEscape)", url.QueryEscape(awkward)},
		{"form body with lower-case hex", strings.ToLower(url.QueryEscape(awkward))},
		{"path (url.PathEscape)", url.PathEscape(awkward)},
		{"inside a JSON string", strings.Trim(string(jsonHTML), `"`)},
		{"inside a JSON string without HTML escaping", `p@ss w/rd+&=é\"<x>\\%`},
		{"Go %q", strings.Trim(fmt.Sprintf("%q", awkward), `"`)},
		{"Go %+q", strings.Trim(fmt.Sprintf("%+q", awkward), `"`)},
		{"base64", base64.StdEncoding.EncodeToString([]byte(awkward))},
		{"base64 URL alphabet without padding", base64.RawURLEncoding.EncodeToString([]byte(awkward))},
		{"HTTP Basic of id:secret", base64.StdEncoding.EncodeToString([]byte("client id:" + awkward))},
		{"HTTP Basic of both form-encoded (RFC 6749 2.3.1)",
			base64.StdEncoding.EncodeToString([]byte(url.QueryEscape("client id") + ":" + url.QueryEscape(awkward)))},
		{"HTTP Basic inside a form body", url.QueryEscape("Basic " + base64.StdEncoding.EncodeToString([]byte("client id:"+awkward)))},
		{"a file's secret as read (trimmed)", "padded-in-its-file"},
		{"a file's secret as is", "  padded-in-its-file \n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			text := "server said: [" + tt.form + "] end"
			got := s.Scrub(text)
			if strings.Contains(got, tt.form) || !strings.Contains(got, Redacted) {
				t.Fatalf("Scrub(%q) = %q", text, got)
			}
			if !strings.HasPrefix(got, "server said: [") || !strings.HasSuffix(got, "] end") {
				t.Fatalf("Scrub changed what is no secret: %q", got)
			}
		})
	}
}

func TestScrubberLeavesOtherTextAndNilAlone(t *testing.T) {
	t.Parallel()
	text := "status 401: invalid_client (Client authentication failed)"
	if got := NewScrubber(New("hunter2"), Secret{}).Scrub(text); got != text {
		t.Fatalf("Scrub = %q", got)
	}
	if got := NewScrubber().Scrub(text); got != text {
		t.Fatalf("empty scrubber: %q", got)
	}
	var nilScrubber *Scrubber
	nilScrubber.Add(New("x"))
	if got := nilScrubber.Scrub(text); got != text {
		t.Fatalf("nil scrubber: %q", got)
	}
	err := errors.New(text)
	if nilScrubber.Error(err) != err || NewScrubber(New("hunter2")).Error(err) != err || NewScrubber().Error(nil) != nil {
		t.Fatal("an error without a secret must come back as it is")
	}
}

// A secret that holds another is replaced whole, not around the shorter
// one.
func TestScrubberReplacesTheLongestSecretFirst(t *testing.T) {
	t.Parallel()
	s := NewScrubber(New("abcd"), New("xxabcdxx"))
	if got := s.Scrub("1 xxabcdxx 2 abcd"); got != "1 "+Redacted+" 2 "+Redacted {
		t.Fatalf("Scrub = %q", got)
	}
}

// Error scrubs the message and still unwraps, so that the error keeps its
// class (context's end, a permanent wrapper).
func TestScrubbedErrorKeepsItsClass(t *testing.T) {
	t.Parallel()
	s := NewScrubber(New("hunter2"))
	err := s.Error(fmt.Errorf("token endpoint said client_secret=hunter2: %w", context.DeadlineExceeded))
	if strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), Redacted) {
		t.Fatalf("Error() = %q", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal("the scrubbed error lost its class")
	}
	if wrapped := fmt.Errorf("start: %w", err); strings.Contains(wrapped.Error(), "hunter2") {
		t.Fatalf("wrapping shows the secret: %q", wrapped)
	}
}

// Secrets added while others scrub (a secret file read anew) are seen by
// the next Scrub; run with -race.
func TestScrubberAddWhileScrubbing(t *testing.T) {
	t.Parallel()
	s := NewScrubber(New("first-secret"))
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 100 {
				s.Add(New(fmt.Sprintf("rotated-%d-%d", i, j)))
				if got := s.Scrub("first-secret"); got != Redacted {
					t.Errorf("Scrub = %q", got)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := s.Scrub("rotated-3-99"); got != Redacted {
		t.Fatalf("a secret added last: %q", got)
	}
}

// A secret shorter than MinScrubLen is no credential and is not scrubbed:
// a test configuration's "s" must not garble "connection refused".
func TestScrubberLeavesTooShortSecretsAlone(t *testing.T) {
	t.Parallel()
	s := NewScrubber(New("s"), New("long-enough-secret"))
	if got := s.Scrub("connection refused (cw==): long-enough-secret"); got != "connection refused (cw==): "+Redacted {
		t.Fatalf("Scrub = %q", got)
	}
}
