package secret

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"net/url"
	"strings"
	"testing"
)

// The forms in which a token endpoint, a proxy or a logger echoes an OAuth
// client's secret (issue 29 item 9): before the scrubber undid escapes and
// looked inside base64 and at cut secrets, the HTML-escaped, the
// upper-case %XX, the base64 of the whole form body and the cut forms
// leaked.
func TestScrubberRemovesEveryEchoOfAClientSecret(t *testing.T) {
	t.Parallel()
	const (
		id  = "collector client"
		sec = `echo+me/s3cr3t=&"é% x<y>`
	)
	s := NewScrubber()
	s.AddBasic(id, New(sec))
	body := "grant_type=client_credentials&client_id=" + url.QueryEscape(id) + "&client_secret=" + url.QueryEscape(sec) + "&scope=write"
	jsonHTML, _ := json.Marshal(sec)
	var jsonPlain strings.Builder
	enc := json.NewEncoder(&jsonPlain)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(sec)
	for _, tt := range []struct{ name, form string }{
		{"raw", sec},
		{"form body escape (url.QueryEscape, upper-case %XX)", url.QueryEscape(sec)},
		{"lower-case %XX", lowerPercent(url.QueryEscape(sec))},
		{"every byte as upper-case %XX", percentAll(sec, "%%%02X")},
		{"every byte as lower-case %XX", percentAll(sec, "%%%02x")},
		{"path escape (url.PathEscape)", url.PathEscape(sec)},
		{"encodeURIComponent (%20 for a space)", strings.ReplaceAll(url.QueryEscape(sec), "+", "%20")},
		{"escaped twice (%25XX)", url.QueryEscape(url.QueryEscape(sec))},
		{"JSON string (HTML-safe)", strings.Trim(string(jsonHTML), `"`)},
		{"JSON string", strings.Trim(strings.TrimSpace(jsonPlain.String()), `"`)},
		{"JSON string inside a JSON string", strings.Trim(mustJSON(strings.Trim(string(jsonHTML), `"`)), `"`)},
		{"Go %q", strings.Trim(fmt.Sprintf("%q", sec), `"`)},
		{"Go %+q", strings.Trim(fmt.Sprintf("%+q", sec), `"`)},
		{"HTML-escaped (&amp; &#34; &lt;)", html.EscapeString(sec)},
		{"HTML decimal references (&#43;)", htmlAll(sec, "&#%d;")},
		{"HTML hex references (&#x2B;)", htmlAll(sec, "&#x%X;")},
		{"HTML-escaped form body", html.EscapeString(body)},
		{"base64 of the secret", base64.StdEncoding.EncodeToString([]byte(sec))},
		{"base64 URL, unpadded, of the secret", base64.RawURLEncoding.EncodeToString([]byte(sec))},
		{"base64 of the whole form body", base64.StdEncoding.EncodeToString([]byte(body))},
		{"base64 URL of the whole form body", base64.URLEncoding.EncodeToString([]byte(body))},
		{"base64 URL, unpadded, of the form body after one byte", base64.RawURLEncoding.EncodeToString([]byte("x" + body))},
		{"base64 of a JSON body", base64.StdEncoding.EncodeToString([]byte(`{"client_secret":` + string(jsonHTML) + `}`))},
		{"HTTP Basic of id:secret", "Basic " + base64.StdEncoding.EncodeToString([]byte(id+":"+sec))},
		{"HTTP Basic, form-encoded first (RFC 6749 2.3.1)", "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id)+":"+url.QueryEscape(sec)))},
		{"HTTP Basic inside a form body", url.QueryEscape("Basic " + base64.StdEncoding.EncodeToString([]byte(id+":"+sec)))},
		{"cut after 12 bytes", sec[:12] + "..."},
		{"cut after 15 bytes, escaped", url.QueryEscape(sec[:15]) + "..."},
		{"base64 cut after 12 characters", base64.StdEncoding.EncodeToString([]byte(sec))[:12] + "..."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			text := `{"error":"invalid_client","error_description":"request [` + tt.form + `] refused"}`
			got := s.Scrub(text)
			if strings.Contains(got, tt.form) || !strings.Contains(got, Redacted) {
				t.Fatalf("Scrub(%s)\n = %s", text, got)
			}
			if !strings.HasPrefix(got, `{"error":"invalid_client","error_description":"request [`) || !strings.HasSuffix(got, `] refused"}`) {
				t.Fatalf("Scrub changed what is no secret: %s", got)
			}
			if strings.Contains(got, sec[:issueCut]) || strings.Contains(html.UnescapeString(got), sec[:issueCut]) {
				t.Fatalf("the start of the secret is still there: %s", got)
			}
		})
	}
}

// Text that only looks like escapes is left alone.
func TestScrubberLeavesEscapesWithoutSecretsAlone(t *testing.T) {
	t.Parallel()
	s := NewScrubber(New("echo+me/s3cr3t"))
	for _, text := range []string{
		`a%2Bb &amp; c \u0026 d \x41 %zz &#xZZ; &unknown; \q +plus+ %`,
		`echo+me/s3c ech%6F+me/s3c`, // 11 bytes of it, as they are and escaped: a cut is scrubbed from 12
		"",
		`\`, `&`, `%4`, `\u12`, `&#1114112;`, `\U0011ffff`,
	} {
		if got := s.Scrub(text); got != text {
			t.Errorf("Scrub(%q) = %q", text, got)
		}
	}
}

// issueCut is the cut that issue 29 names: a secret cut after 12
// characters leaked.
const issueCut = 12

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// lowerPercent writes the %XX escapes of s in lower case.
func lowerPercent(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = []byte(strings.ToLower(string(b[i+1 : i+3])))[0], []byte(strings.ToLower(string(b[i+1 : i+3])))[1]
			i += 2
		}
	}
	return string(b)
}

// percentAll escapes every byte of s with format ("%%%02X").
func percentAll(s, format string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, format, s[i])
	}
	return b.String()
}

// htmlAll writes every character of s but letters and digits as an HTML
// character reference of format ("&#%d;").
func htmlAll(s, format string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
			continue
		}
		fmt.Fprintf(&b, format, r)
	}
	return b.String()
}
