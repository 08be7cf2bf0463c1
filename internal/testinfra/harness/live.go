package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// A running collector serves GET /state, /readyz and /metrics on
// metrics.listen (Config.Metrics); these read them. Each gives up after a
// short timeout and reports a collector that does not answer (yet) as
// nothing, so that a test can poll.

// LiveStream is one stream of a running collector's GET /state.
type LiveStream struct {
	Tenant    string    `json:"tenant"`
	Source    string    `json:"source"`
	Account   string    `json:"account"`
	Watermark time.Time `json:"watermark"`
	Delivered int64     `json:"rows_delivered"`
	CaughtUp  bool      `json:"caught_up"`
	LastError string    `json:"last_error"`
	// Sinks is what each sink has not acknowledged yet of the stream.
	Sinks []LiveSinkLag `json:"sinks"`
	// Blocked is set while the API refuses the stream for good (C5).
	Blocked *struct {
		Reason string `json:"reason"`
		Error  string `json:"error"`
	} `json:"blocked"`
	// Learnt is what the poller learnt of the server's paging (C3).
	Learnt *struct {
		PageRows           int     `json:"page_rows"`
		NextPageTTLSeconds float64 `json:"next_page_ttl_seconds"`
		SplitAtRows        int64   `json:"split_at_rows"`
	} `json:"learnt"`
}

// LiveSinkLag is one sink's lag on a stream in GET /state.
type LiveSinkLag struct {
	Sink                 string  `json:"sink"`
	PendingRecords       int64   `json:"pending_records"`
	OldestPendingSeconds float64 `json:"oldest_pending_seconds"`
}

// SinkPending sums each sink's pending records over every stream.
func SinkPending(st map[record.Stream]LiveStream) map[string]int64 {
	out := map[string]int64{}
	for _, s := range st {
		for _, l := range s.Sinks {
			out[l.Sink] += l.PendingRecords
		}
	}
	return out
}

// LiveState reads GET /state of the collector serving metrics on addr;
// nil when it does not answer 200 with a JSON list.
func LiveState(addr string) map[record.Stream]LiveStream {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/state")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	var st []LiveStream
	if json.NewDecoder(resp.Body).Decode(&st) != nil {
		return nil
	}
	out := map[record.Stream]LiveStream{}
	for _, s := range st {
		out[record.Stream{Tenant: s.Tenant, Source: s.Source, Account: s.Account}] = s
	}
	return out
}

// SumDelivered sums rows_delivered over every stream.
func SumDelivered(st map[record.Stream]LiveStream) int64 {
	var n int64
	for _, s := range st {
		n += s.Delivered
	}
	return n
}

// LiveWatermarks turns live states into checkpoint states for
// CompareWithTruth, keeping only streams whose watermark passed from, and
// returns those streams, sorted.
func LiveWatermarks(st map[record.Stream]LiveStream, from time.Time) (map[record.Stream]checkpoint.State, []record.Stream) {
	out := map[record.Stream]checkpoint.State{}
	var keys []record.Stream
	for k, s := range st {
		if s.Watermark.After(from) {
			out[k] = checkpoint.State{Cursor: cursor.Cursor{Watermark: s.Watermark}, Delivered: s.Delivered}
			keys = append(keys, k)
		}
	}
	sortStreams(keys)
	return out, keys
}

// Ready reads GET /readyz: the status code (0 when the collector does not
// answer) and the checks of its JSON body.
func Ready(addr string) (int, map[string]string) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var body struct {
		Checks map[string]string `json:"checks"`
	}
	json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body.Checks
}

// ScrapeGauges reads the samples of the unlabelled series names from
// http://addr/metrics; a failed scrape (the collector not listening yet,
// or gone) gives none.
func ScrapeGauges(addr string, names ...string) map[string]float64 {
	c := http.Client{Timeout: 500 * time.Millisecond}
	res, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil
	}
	defer res.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || !slices.Contains(names, name) {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
			out[name] = v
		}
	}
	return out
}

// HTTPGet gets url within 5 s and returns the body and the status code;
// when the request fails, the error's text and 0.
func HTTPGet(url string) (string, int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error(), 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), resp.StatusCode
}

// WaitState polls the /state of p (served on addr) until cond holds for
// it, and returns that state. It fails tb, with what cond said of the last
// state it saw, when timeout passes or p exits first. cond sees nil while
// the collector does not answer. Tests wait with it instead of sleeping a
// fixed time, which a loaded machine makes too short.
func WaitState(tb testing.TB, p *Process, addr string, timeout time.Duration,
	cond func(map[record.Stream]LiveStream) (ok bool, progress string)) map[record.Stream]LiveStream {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st := LiveState(addr)
		ok, progress := cond(st)
		if ok {
			return st
		}
		if time.Now().After(deadline) {
			tb.Fatalf("after %v: %s\n%s", timeout, progress, p.Tail(20))
		}
		select {
		case <-p.Exited():
			tb.Fatalf("the collector exited (%v): %s\n%s", p.Err(), progress, p.Tail(20))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// WaitCommitted waits (WaitState) until at least n of the streams of p's
// /state (all of them when n <= 0), or of those of only when only is not
// nil, have a watermark after from.
func WaitCommitted(tb testing.TB, p *Process, addr string, from time.Time, only []record.Stream, n int, timeout time.Duration) {
	tb.Helper()
	WaitState(tb, p, addr, timeout, func(st map[record.Stream]LiveStream) (bool, string) {
		if only != nil {
			for k := range st {
				if !slices.Contains(only, k) {
					delete(st, k)
				}
			}
		}
		_, moved := LiveWatermarks(st, from)
		want := n
		if want <= 0 {
			want = max(len(st), 1)
		}
		return len(moved) >= want, fmt.Sprintf("%d of %d streams committed, want %d", len(moved), len(st), want)
	})
}
