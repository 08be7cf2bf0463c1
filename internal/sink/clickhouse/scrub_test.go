package clickhouse

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/secret"
)

// TestPasswordEchoedByTheServerNeverShows: a server (here a misbehaving
// proxy in front of ClickHouse's HTTP interface) that answers with the
// request's headers, X-ClickHouse-Key included, makes Start and Check fail
// with errors, and logs, that hold neither the password nor its Basic
// form, nor another secret of the process the shared scrubber knows
// (issue 20 item 3).
func TestPasswordEchoedByTheServerNeverShows(t *testing.T) {
	t.Parallel()
	const (
		password = "ch-pa55word/+="
		other    = "kafka-oauth-client-secret"
	)
	var mu sync.Mutex
	echoed := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var h strings.Builder
		r.Header.Write(&h)
		mu.Lock()
		echoed++
		mu.Unlock()
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintf(w, "proxy error, request was:\n%s %s\n%s\nand %s", r.Method, r.URL, h.String(), other)
	}))
	t.Cleanup(srv.Close)

	cfg := DefaultConfig()
	cfg.Protocol = ProtocolHTTP
	cfg.Addr = []string{strings.TrimPrefix(srv.URL, "http://")}
	cfg.Password = secret.New(password)
	cfg.DialTimeout, cfg.QueryTimeout = 2*time.Second, 2*time.Second
	var logs bytes.Buffer
	var logMu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logs.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := New(cfg, nil, log, WithScrubber(secret.NewScrubber(secret.New(other))))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	startErr := s.Start(ctx)
	checkErr := s.Check(ctx)
	if startErr == nil || checkErr == nil {
		t.Fatalf("Start = %v, Check = %v: want both to fail against the proxy", startErr, checkErr)
	}
	mu.Lock()
	n := echoed
	mu.Unlock()
	if n == 0 {
		t.Fatal("the proxy saw no request")
	}
	logMu.Lock()
	logged := logs.String()
	logMu.Unlock()
	t.Logf("Start: %v", startErr)
	for _, leak := range []string{password, other, base64.StdEncoding.EncodeToString([]byte("default:" + password))} {
		for what, text := range map[string]string{"Start": startErr.Error(), "Check": checkErr.Error(), "the log": logged} {
			if strings.Contains(text, leak) {
				t.Errorf("%s holds %q:\n%s", what, leak, text)
			}
		}
	}
	if !strings.Contains(startErr.Error(), secret.Redacted) {
		t.Errorf("the echo did not reach the error, or was not redacted: %v", startErr)
	}
}

// writerFunc is an io.Writer of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
