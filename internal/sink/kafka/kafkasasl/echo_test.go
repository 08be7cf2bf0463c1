package kafkasasl

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/secret"
)

// The probe of issue 29 item 9: a token endpoint that refuses the client
// and echoes what it was sent in its error_description, in each of the
// forms servers and proxies echo text in. The client's error shows the
// secret in none of them; HTML-escaped, upper-case %XX, base64 of the
// whole form body and cut after 12 characters, it showed it.
func TestTokenEndpointEchoesInEveryFormLeakNoSecret(t *testing.T) {
	t.Parallel()
	const sec = `echo+me/s3cr3t=&"é% x<y>`
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	percentAll := func(s string) string {
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			fmt.Fprintf(&b, "%%%02X", s[i])
		}
		return b.String()
	}
	for _, tt := range []struct {
		name string
		echo func(body, authorization string) string
	}{
		{"the form body", func(body, _ string) string { return body }},
		{"the secret", func(string, string) string { return sec }},
		{"the secret, query-escaped", func(string, string) string { return url.QueryEscape(sec) }},
		{"the secret, path-escaped", func(string, string) string { return url.PathEscape(sec) }},
		{"the form body, lower-case %XX", func(body, _ string) string { return strings.ToLower(body) }},
		{"the secret, every byte as upper-case %XX", func(string, string) string { return percentAll(sec) }},
		{"the secret in a JSON string", func(string, string) string { b, _ := json.Marshal(sec); return string(b) }},
		{"the secret, HTML-escaped", func(string, string) string { return html.EscapeString(sec) }},
		{"the form body, HTML-escaped", func(body, _ string) string { return html.EscapeString(body) }},
		{"the secret, as HTML references", func(string, string) string {
			var b strings.Builder
			for _, r := range sec {
				fmt.Fprintf(&b, "&#x%X;", r)
			}
			return b.String()
		}},
		{"base64 of the secret", func(string, string) string { return b64(sec) }},
		{"base64 of the whole form body", func(body, _ string) string { return b64(body) }},
		{"URL-safe base64 of the whole form body", func(body, _ string) string { return base64.RawURLEncoding.EncodeToString([]byte(body)) }},
		{"the Authorization header", func(_, authorization string) string { return authorization }},
		{"the secret cut after 12 characters", func(string, string) string { return sec[:12] + "..." }},
		{"base64 of the secret cut after 12 characters", func(string, string) string { return b64(sec)[:12] + "..." }},
	} {
		for _, post := range []bool{false, true} {
			if strings.Contains(tt.name, "form body") && !post || strings.Contains(tt.name, "Authorization") && post {
				continue // the secret is not there with this client_auth
			}
			name := tt.name + " (basic)"
			if post {
				name = tt.name + " (post)"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				var echoed string
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					body, _ := io.ReadAll(r.Body)
					echoed = tt.echo(string(body), r.Header.Get("Authorization"))
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusUnauthorized)
					_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client", "error_description": "got " + echoed})
				}))
				t.Cleanup(srv.Close)
				o := OAuthConfig{TokenURL: srv.URL + "/token", ClientID: clientID, ClientSecret: secret.New(sec)}
				if post {
					o.ClientAuth = ClientAuthPost
				}
				opts := Options{Now: time.Now, Log: slog.New(slog.DiscardHandler), Scrubber: secret.NewScrubber()}
				opts.defaults()
				f, err := o.tokenFunc("sink.kafka.sasl.oauth", opts)
				if err != nil {
					t.Fatal(err)
				}
				_, err = f(context.Background())
				if err == nil || !strings.Contains(err.Error(), "invalid_client") {
					t.Fatalf("err = %v, want the endpoint's refusal", err)
				}
				if echoed == "" {
					t.Fatal("the endpoint echoed nothing")
				}
				msg := err.Error()
				if strings.Contains(msg, echoed) && strings.Contains(echoed, "s3cr3t") || strings.Contains(msg, sec[:12]) ||
					strings.Contains(html.UnescapeString(msg), sec[:12]) || strings.Contains(msg, b64(sec)[:12]) {
					t.Fatalf("the secret shows in the error:\n%s", msg)
				}
				if !strings.Contains(msg, secret.Redacted) {
					t.Fatalf("nothing was redacted:\n%s", msg)
				}
			})
		}
	}
}
