package source

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/ratelog"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/source/pagescan"
	"github.com/svcexport/collector/internal/testinfra/simtest"
	"github.com/svcexport/collector/internal/window"
)

// C3, C5: a 2xx that is not a page (an empty 200, {}, data null, no data
// member, data not an array, malformed paging, a 202) is not an empty
// window: it is retried like a cut-off body, counted under reason
// "malformed" and logged at WARN from the first time.
func TestClient_C5_MalformedAnswersAreRetriedNotEmpty(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, body string
		status     int
	}{
		{"an empty 200", ``, 200},
		{"an empty object", `{}`, 200},
		{"null data", `{"data":null}`, 200},
		{"no data member", `{"paging":{"rows":0,"totalRows":0,"urls":{}}}`, 200},
		{"data not an array", `{"data":"none"}`, 200},
		{"negative totalRows", `{"paging":{"rows":0,"totalRows":-3},"data":[]}`, 200},
		{"a 202", `{"data":[]}`, 202},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int64
			srv := httptest.NewServer(tokenThen(func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) == 1 {
					w.WriteHeader(tt.status)
					fmt.Fprint(w, tt.body)
					return
				}
				fmt.Fprint(w, `{"data":[{"a":1}]}`)
			}))
			t.Cleanup(srv.Close)
			var logs simtest.SyncBuffer
			reg := prometheus.NewRegistry()
			c := malformedClient(t, srv.URL, reg, slogTo(&logs))
			var pb pagescan.Body
			_, err := c.Do(t.Context(), api.Request{Method: "GET", URL: "/api/v2/CloudActivities", Account: "acme",
				Functionality: catalog.SourceCloudActivities, What: "fetch page 1 of cloud_activities/acme",
				Decode: func(s int, b []byte) error {
					var err error
					pb, err = pagescan.Classify(s, b, "data")
					return err
				}})
			if err != nil || len(pb.Records) != 1 {
				t.Fatalf("err %v, %d records, want the retried page", err, len(pb.Records))
			}
			if n.Load() != 2 {
				t.Fatalf("%d requests, want 2", n.Load())
			}
			if got := gathered(t, reg, "collector_retries_total", "source", catalog.SourceCloudActivities, "reason", "malformed"); got != 1 {
				t.Fatalf("retries{reason=malformed} = %v", got)
			}
			if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "reason=malformed") {
				t.Fatalf("not logged at WARN:\n%s", logs.String())
			}
		})
	}
}

// C3, C5: a poller whose first answers are empty 200s, {} and data null
// does not move its watermark past the window: the window's records all
// arrive once the server answers properly.
func TestPoller_C3_C5_MalformedAnswersLoseNoWindow(t *testing.T) {
	t.Parallel()
	times := spread(time.Now().Add(-20*time.Hour), 500, time.Minute)
	bad := []string{``, `{}`, `{"data":null}`, `{"paging":{"rows":0,"totalRows":0}}`}
	srv := newPageServer(t, times, 200, func(s *pageServer) {
		s.fault = func(n int64, w http.ResponseWriter, r *http.Request) bool {
			if int(n) > len(bad) {
				return false
			}
			w.Header().Set("Content-Length", fmt.Sprint(len(bad[n-1])))
			fmt.Fprint(w, bad[n-1])
			return true
		}
	})
	e := newEnv(t, pageServerConfig(srv), nil)
	col := newTally(len(times))
	if err := e.poller(catalog.SourceDNS, "acme", true).Run(t.Context(), cursor.Cursor{}, col); err != nil {
		t.Fatal(err)
	}
	if m := col.missing(); m != 0 {
		t.Fatalf("%d of %d records lost", m, len(times))
	}
	pages, sizes, _ := col.snapshot()
	checkBatches(t, pages, sizes, 0)
	if got := e.apiMetric("collector_retries_total", "source", catalog.SourceDNS, "reason", "malformed"); got != float64(len(bad)) {
		t.Fatalf("retries{malformed} = %v, want %d", got, len(bad))
	}
	if !strings.Contains(e.logs.String(), "reason=malformed") {
		t.Fatal("malformed answers not logged")
	}
}

// A page of 10,000 records whose time cannot be read writes one warning,
// not 10,000, and counts every record under its reason.
func TestEnvelopes_BadRecordsAreCountedByReasonAndLoggedRateLimited(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	m, _ := NewMetrics(nil)
	clk := &stepClock{t: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)}
	eb := envelopeBuilder{Source: catalog.SourceDNS, Account: "acme", TimeField: "createdTime", Metrics: m,
		Warn: ratelog.New(slogTo(&buf), clk.Now, time.Minute)}
	var body strings.Builder
	body.WriteString(`{"data":[`)
	for i := range 10000 {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"createdTime":"when %d?"},{"n":%d}`, i, i)
	}
	body.WriteString("]}")
	p, err := pagescan.Parse([]byte(body.String()), "data")
	if err != nil {
		t.Fatal(err)
	}
	w := window.Window{Start: clk.t, End: clk.t.Add(time.Hour)}
	envs, err := eb.Build(p.Records, w, w.End)
	if err != nil || len(envs) != 20000 {
		t.Fatalf("%d envelopes, err %v", len(envs), err)
	}
	if got := testutilValue(m.BadRecords(catalog.SourceDNS, "acme", BadRecordTimeUnreadable)); got != 10000 {
		t.Fatalf("bad records{time_unreadable} = %v", got)
	}
	if got := testutilValue(m.BadRecords(catalog.SourceDNS, "acme", BadRecordTimeMissing)); got != 10000 {
		t.Fatalf("bad records{time_missing} = %v", got)
	}
	if n := strings.Count(buf.String(), "\n"); n != 2 {
		t.Fatalf("%d log lines, want one per reason:\n%.2000s", n, buf.String())
	}
	m.BadRecord(catalog.SourceDNS, "acme", "something new")
	if got := testutilValue(m.BadRecords(catalog.SourceDNS, "acme", BadRecordOther)); got != 1 {
		t.Fatalf("an unknown reason is not counted as other: %v", got)
	}
}

// tokenThen answers the token endpoint and sends generous RateLimit
// headers; every other request goes to data.
func tokenThen(data http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("RateLimit-Limit", "1000")
		w.Header().Set("RateLimit-Remaining", "999")
		w.Header().Set("RateLimit-Reset", "0")
		if r.URL.Path == "/api/v2/access/tokens" {
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"token":"tok-1","expiresAt":"%s"}`, time.Now().Add(time.Hour).UTC().Format(apiTimeLayout))
			return
		}
		data(w, r)
	})
}

// malformedClient is a core client of base with fast retries, its metrics
// on reg and its logs at DEBUG in log.
func malformedClient(t *testing.T, base string, reg prometheus.Registerer, log *slog.Logger) *api.Client {
	t.Helper()
	cfg := api.DefaultConfig()
	cfg.BaseURL, cfg.KeyID, cfg.Secret = base, "k", secret.New("the-secret-value")
	cfg.Retry = api.RetryConfig{Initial: time.Millisecond, Max: 5 * time.Millisecond}
	cfg.Timeout = 2 * time.Second
	cfg.Rate = api.RateConfig{Limit: 1000, Period: time.Second, Reserve: 0.1}
	m, err := api.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := api.NewClient(cfg, nil, api.Options{Logger: log, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
