package harness

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/config"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

func TestMain(m *testing.M) { os.Exit(Main(m, CheckLeaks())) }

// recorder is a testing.TB whose failures are recorded instead of failing
// the test, so that a test can check that a helper fails when it must.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
	fatal  bool
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Error(args ...any) { r.Errorf("%s", fmt.Sprint(args...)) }

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.mu.Lock()
	r.fatal = true
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

// failures runs f with a fresh recorder on a goroutine of its own (a
// Fatal ends it) and returns what f reported.
func failures(t *testing.T, f func(tb testing.TB)) []string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.errors
}

// The file New writes is the configuration the test asked for, as the
// collector's own loader reads it with the environment its commands get.
func TestConfigIsWhatTheCollectorLoads(t *testing.T) {
	t.Parallel()
	sim := StartSim(t)
	start := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)

	c := New(t, Config{Sim: sim, Start: start})
	cfg, err := config.Load(c.ConfigPath(), c.Environ())
	if err != nil {
		t.Fatal(err)
	}
	dns := cfg.Sources.Resolve("dns")
	if got := strings.Join(cfg.Accounts, ","); got != "acme,acme-dev" || !dns.Enabled || dns.Lag != 2*time.Minute || dns.Interval != time.Second {
		t.Errorf("defaults: accounts %s, dns %+v", got, dns)
	}
	if cfg.Sink.Type != "file" || cfg.Sink.File.Dir != c.OutDir() || !cfg.Sink.File.Fsync || cfg.Metrics.Listen != "" ||
		cfg.Log.Level != "info" || cfg.Edge.BaseURL != sim.EdgeURL() || cfg.API.Secret.Reveal() != Secret || cfg.Edge.Token.Reveal() != EdgeToken {
		t.Errorf("defaults: sink %+v, metrics %q, log %q, edge %q", cfg.Sink.File, cfg.Metrics.Listen, cfg.Log.Level, cfg.Edge.BaseURL)
	}

	out := filepath.Join(t.TempDir(), "elsewhere")
	c = New(t, Config{Sim: sim, Start: start, Accounts: []string{"acme"}, Sources: []string{"dns"},
		Lag: 5 * time.Second, Interval: Omit, Overlap: 20 * time.Second, PageRows: 500, Rate: Rate{Limit: 60, Period: 5 * time.Second},
		OutDir: out, NoFsync: true, Metrics: "127.0.0.1:9", LogLevel: "warn", Env: []string{"COLLECTOR_PIPELINE__BUFFER_RECORDS=20000"}})
	cfg, err = config.Load(c.ConfigPath(), c.Environ())
	if err != nil {
		t.Fatal(err)
	}
	dns = cfg.Sources.Resolve("dns")
	if strings.Join(cfg.Accounts, ",") != "acme" || !dns.Enabled || cfg.Sources.Resolve("connections").Enabled ||
		dns.Lag != 5*time.Second || dns.Overlap != 20*time.Second || dns.Interval == time.Second {
		t.Errorf("accounts %v, dns %+v", cfg.Accounts, dns)
	}
	if cfg.API.PageRows != 500 || cfg.API.Rate.Limit != 60 || cfg.API.Rate.Period != 5*time.Second || cfg.Edge.Rate.Limit != 60 {
		t.Errorf("api %d rows, rate %+v, edge rate %+v", cfg.API.PageRows, cfg.API.Rate, cfg.Edge.Rate)
	}
	if cfg.Sink.File.Dir != out || c.OutDir() != out || cfg.Sink.File.Fsync || cfg.Metrics.Listen != "127.0.0.1:9" ||
		cfg.Log.Level != "warn" || cfg.Pipeline.BufferRecords != 20000 {
		t.Errorf("sink %+v, metrics %q, log %q, buffer %d", cfg.Sink.File, cfg.Metrics.Listen, cfg.Log.Level, cfg.Pipeline.BufferRecords)
	}
	if got := c.Streams(); len(got) != 1 || got[0] != (record.Stream{Source: "dns", Account: "acme"}) {
		t.Errorf("Streams() = %v", got)
	}
}

// CompareWithTruth accepts exactly the simulator's records of a window
// that spans a UTC midnight, and reports one missing, one extra, and a
// stream without a watermark.
func TestCompareWithTruthHoldsTheOutputToTheSimulator(t *testing.T) {
	t.Parallel()
	sim := StartSim(t, func(c *apisim.Config) { c.Rates = map[string]float64{"dns": 200} })
	midnight := time.Now().UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour)
	start, end := midnight.Add(-2*time.Hour), midnight.Add(time.Hour)
	k := record.Stream{Source: "dns", Account: "acme"}
	out := NewOutput()
	for _, raw := range APIRecords(t, sim, "/api/v2/Activities/DNSs/search", "acme", start, end) {
		id, err := record.ID("dns", raw)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		tm, err := record.ParseTime(m["createdTime"])
		if err != nil {
			t.Fatal(err)
		}
		out.Add(k, id, tm)
	}
	if out.Total < 100 {
		t.Fatalf("only %d records in the window", out.Total)
	}
	wms := map[record.Stream]checkpoint.State{k: {Cursor: cursor.Cursor{Watermark: end}}}
	var n int64
	if errs := failures(t, func(tb testing.TB) { n = CompareWithTruth(tb, sim, out, []record.Stream{k}, start, wms) }); len(errs) != 0 || n != int64(out.Total) {
		t.Fatalf("the simulator's own records: %d compared, errors %v", n, errs)
	}

	var dropped string
	for id := range out.IDs[k] {
		dropped = id
		break
	}
	missing := NewOutput()
	for id, c := range out.IDs[k] {
		if id != dropped {
			for range c {
				missing.Add(k, id, out.Times[id])
			}
		}
	}
	if errs := failures(t, func(tb testing.TB) { CompareWithTruth(tb, sim, missing, []record.Stream{k}, start, wms) }); len(errs) != 1 {
		t.Errorf("one record missing: %d errors %v, want one (its day)", len(errs), errs)
	}
	out.Add(k, strings.Repeat("ab", 32), midnight.Add(time.Minute))
	if errs := failures(t, func(tb testing.TB) { CompareWithTruth(tb, sim, out, []record.Stream{k}, start, wms) }); len(errs) != 1 {
		t.Errorf("one record too many: %d errors %v, want one (its day)", len(errs), errs)
	}
	if errs := failures(t, func(tb testing.TB) {
		CompareWithTruth(tb, sim, out, []record.Stream{{Source: "dns", Account: "acme-dev"}}, start, wms)
	}); len(errs) != 1 || !strings.Contains(errs[0], "no watermark") {
		t.Errorf("a stream without a watermark: %v", errs)
	}
}

// C6: the collector commits an edge source as one stream (source, "edge")
// while each record's envelope names its own account; the comparison takes
// each envelope account's records below that one watermark, and an edge
// stream named as the checkpoint names it stands for every account.
func TestCompareWithTruthTakesEdgeRecordsPerEnvelopeAccount(t *testing.T) {
	t.Parallel()
	sim := StartSim(t, func(c *apisim.Config) { c.Rates = map[string]float64{"edge_audit_events": 300} })
	end := time.Now().UTC().Add(-time.Hour).Truncate(time.Minute)
	start := end.Add(-3 * time.Hour)
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/api/v1/audit_events?start_time=%d&end_time=%d", sim.EdgeURL(), start.UnixMilli(), end.UnixMilli()), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+EdgeToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		AuditEvents []json.RawMessage `json:"audit_events"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	out := NewOutput()
	for _, raw := range body.AuditEvents {
		var m struct {
			Account string          `json:"account_name"`
			Create  json.RawMessage `json:"create_time"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		id, _ := record.ID("edge_audit_events", raw)
		tm, err := record.ParseTime(m.Create)
		if err != nil {
			t.Fatal(err)
		}
		out.Add(record.Stream{Source: "edge_audit_events", Account: m.Account}, id, tm)
	}
	edge := record.Stream{Source: "edge_audit_events", Account: EdgeAccount}
	wms := map[record.Stream]checkpoint.State{edge: {Cursor: cursor.Cursor{Watermark: end}}}
	if len(out.IDs) != 2 || len(out.Of(edge)) != out.Total {
		t.Fatalf("%d envelope accounts, %d ids of the edge stream, %d records", len(out.IDs), len(out.Of(edge)), out.Total)
	}
	for _, streams := range [][]record.Stream{{edge}, Streams([]string{"edge_audit_events"}, Accounts())} {
		var n int64
		if errs := failures(t, func(tb testing.TB) { n = CompareWithTruth(tb, sim, out, streams, start, wms) }); len(errs) != 0 || n != int64(out.Total) {
			t.Fatalf("%v: %d compared of %d, errors %v", streams, n, out.Total, errs)
		}
	}
	if st, ok := WatermarkOf(wms, record.Stream{Source: "edge_audit_events", Account: "acme-dev"}); !ok || st.Watermark != end {
		t.Fatalf("WatermarkOf an edge envelope stream: %v %v", st, ok)
	}
	if _, ok := WatermarkOf(wms, record.Stream{Source: "dns", Account: "acme"}); ok {
		t.Fatal("a core stream took the edge watermark")
	}
}

func TestDaysCutAtUTCMidnight(t *testing.T) {
	t.Parallel()
	at := func(d, h int) time.Time { return time.Date(2026, 11, d, h, 0, 0, 0, time.UTC) }
	for _, c := range []struct {
		name     string
		from, to time.Time
		want     []Day
	}{
		{"an empty span has no day", at(20, 5), at(20, 5), nil},
		{"a span inside a day is one part", at(20, 5), at(20, 7), []Day{{at(20, 0), at(20, 5), at(20, 7)}}},
		{"a span over midnight is two parts", at(20, 22), at(21, 1), []Day{{at(20, 0), at(20, 22), at(21, 0)}, {at(21, 0), at(21, 0), at(21, 1)}}},
		{"whole days are whole", at(20, 0), at(22, 0), []Day{{at(20, 0), at(20, 0), at(21, 0)}, {at(21, 0), at(21, 0), at(22, 0)}}},
	} {
		got := Days(c.from, c.to)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: Days = %v, want %v", c.name, got, c.want)
		}
	}
}

// ReadFileSink reads plain, gzip and in-progress NDJSON files, ignores
// other files, counts repeats, and fails on an envelope whose id is not
// its record's.
func TestReadFileSinkReadsEveryFileAndChecksIDs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	var b record.Builder
	envelope := func(i int) []byte {
		raw := fmt.Sprintf(`{"createdTime":"2026-11-20T01:00:%02d.000Z","fqdn":"h%d.example"}`, i, i)
		e, flaw := b.Build("dns", "acme", "createdTime", ws, ws.Add(time.Hour), ws.Add(2*time.Hour), []byte(raw))
		if flaw != 0 {
			t.Fatal(flaw)
		}
		return e.AppendNDJSON(nil)
	}
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("a.ndjson", append(envelope(1), envelope(2)...))
	write("b.ndjson.part", append(envelope(2), '\n'))
	write("notes.txt", []byte("not an envelope\n"))
	f, err := os.Create(filepath.Join(dir, "c.ndjson.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	zw.Write(envelope(3))
	zw.Close()
	f.Close()

	out := ReadFileSink(t, dir)
	k := record.Stream{Source: "dns", Account: "acme"}
	if out.Total != 4 || len(out.IDs[k]) != 3 || out.Duplicates() != 1 {
		t.Fatalf("read %d deliveries of %d ids, %d duplicates; want 4, 3, 1", out.Total, len(out.IDs[k]), out.Duplicates())
	}
	plain := t.TempDir()
	if err := os.WriteFile(filepath.Join(plain, "a.ndjson"), append(envelope(1), envelope(2)...), 0o600); err != nil {
		t.Fatal(err)
	}
	if n := CountLines(t, plain); n != 2 {
		t.Errorf("CountLines = %d, want 2", n)
	}

	bad := strings.Replace(string(envelope(4)), `h4.example`, `h5.example`, 1)
	write("d.ndjson", []byte(bad))
	if errs := failures(t, func(tb testing.TB) { ReadFileSink(tb, dir) }); len(errs) != 1 || !strings.Contains(errs[0], "not the C7 id") {
		t.Errorf("an envelope whose record was changed: %v", errs)
	}
}

// A Process reports how it ended; Stop and Kill are safe after the end,
// and Wait kills a process that overstays and fails the test.
func TestProcessLifecycle(t *testing.T) {
	t.Parallel()
	p := StartCommand(t, exec.Command("sh", "-c", "echo started; exec sleep 30"))
	select {
	case <-p.Exited():
		t.Fatal("sleep exited at once")
	case <-time.After(100 * time.Millisecond):
	}
	if p.Err() != nil || p.State() != nil {
		t.Fatal("a running process has an exit error or state")
	}
	p.Terminate()
	select {
	case <-p.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("SIGTERM did not end sleep")
	}
	if err := p.Err(); err == nil || p.State() == nil || !strings.Contains(p.Logs(), "started") {
		t.Errorf("after SIGTERM: err %v, logs %q", err, p.Logs())
	}
	if err := p.Stop(time.Second); err == nil {
		t.Error("Stop after the end forgot how it ended")
	}
	p.Kill()

	slow := StartCommand(t, exec.Command("sleep", "30"))
	errs := failures(t, func(tb testing.TB) { slow.Wait(tb, 100*time.Millisecond) })
	if len(errs) != 1 || !strings.Contains(errs[0], "did not exit within") {
		t.Errorf("Wait past its deadline: %v", errs)
	}
	select {
	case <-slow.Exited():
	default:
		t.Error("Wait left the process running")
	}

	quick := StartCommand(t, exec.Command("true"))
	if err := quick.Wait(t, 10*time.Second); err != nil {
		t.Errorf("true: %v", err)
	}
}

// The readers of a running collector's endpoints decode what it serves,
// and give nothing when nobody answers.
func TestLiveEndpoints(t *testing.T) {
	t.Parallel()
	wm := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	mux := http.NewServeMux()
	mux.HandleFunc("/state", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `[{"source":"dns","account":"acme","watermark":%q,"rows_delivered":7},{"source":"dns","account":"b","rows_delivered":3}]`, wm.Format(time.RFC3339))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"checks":{"sink_write":"no space left on device"}}`)
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "# TYPE go_goroutines gauge\ngo_goroutines 42\nother 1\nlabelled{a=\"b\"} 2\n")
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	st := LiveState(addr)
	if len(st) != 2 || SumDelivered(st) != 10 || !st[record.Stream{Source: "dns", Account: "acme"}].Watermark.Equal(wm) {
		t.Errorf("LiveState = %+v", st)
	}
	wms, keys := LiveWatermarks(st, wm.Add(-time.Hour))
	if len(keys) != 1 || keys[0] != (record.Stream{Source: "dns", Account: "acme"}) || wms[keys[0]].Delivered != 7 {
		t.Errorf("LiveWatermarks = %v, %v", wms, keys)
	}
	if code, checks := Ready(addr); code != http.StatusServiceUnavailable || checks["sink_write"] == "" {
		t.Errorf("Ready = %d, %v", code, checks)
	}
	if g := ScrapeGauges(addr, "go_goroutines", "missing"); len(g) != 1 || g["go_goroutines"] != 42 {
		t.Errorf("ScrapeGauges = %v", g)
	}
	if body, code := HTTPGet(srv.URL + "/metrics"); code != http.StatusOK || !strings.Contains(body, "go_goroutines 42") {
		t.Errorf("HTTPGet = %d %q", code, body)
	}
	srv.CloseClientConnections()

	dead := FreeAddr(t)
	if LiveState(dead) != nil || ScrapeGauges(dead, "go_goroutines") != nil {
		t.Error("a closed port answered")
	}
	if code, _ := Ready(dead); code != 0 {
		t.Errorf("Ready of a closed port = %d", code)
	}
	l, err := net.Listen("tcp", dead)
	if err != nil {
		t.Fatalf("FreeAddr gave %s, which cannot be listened on: %v", dead, err)
	}
	l.Close()
	if p := LowFreePort(t); p < 20000 || p >= 32000 {
		t.Errorf("LowFreePort = %d", p)
	}
}

func TestLogLines(t *testing.T) {
	t.Parallel()
	logs := `{"msg":"window too large, split"}
not json
{"msg":"window too large, split","source":"dns"}
{"msg":"done","rows_delivered":1234}
`
	if got := Tail(logs, 2); got != `{"msg":"window too large, split","source":"dns"}`+"\n"+`{"msg":"done","rows_delivered":1234}` {
		t.Errorf("Tail = %q", got)
	}
	if n := CountLogs(logs, "window too large, split"); n != 2 {
		t.Errorf("CountLogs = %d", n)
	}
	if n := DoneRows(t, logs); n != 1234 {
		t.Errorf("DoneRows = %d", n)
	}
	if errs := failures(t, func(tb testing.TB) { DoneRows(tb, `{"msg":"done"}`) }); len(errs) != 1 {
		t.Errorf("logs without rows_delivered: %v", errs)
	}
	r := &Run{Logs: logs}
	if errs := failures(t, func(tb testing.TB) { r.PeakRSS(tb) }); len(errs) != 1 {
		t.Errorf("a run without a memory sample: %v", errs)
	}
}

func TestProcessFigures(t *testing.T) {
	t.Parallel()
	m, err := ReadProcMem(os.Getpid())
	if err != nil || m.RSS <= 0 || m.HWM < m.RSS {
		t.Errorf("ReadProcMem(self) = %+v, %v", m, err)
	}
	if _, err := ReadProcMem(-1); err == nil {
		t.Error("ReadProcMem(-1) found a process")
	}
	if _, ok := CPUTicks(os.Getpid()); !ok {
		t.Error("CPUTicks(self) failed")
	}
	if _, ok := CPUTicks(0); ok {
		t.Error("CPUTicks(0) succeeded")
	}
	if SelfCPU() <= 0 || LoadAvg1() < 0 || !strings.HasPrefix(LoadNote(), "load average ") {
		t.Errorf("SelfCPU %v, LoadAvg1 %v, LoadNote %q", SelfCPU(), LoadAvg1(), LoadNote())
	}
}

func TestWatermarksReadsACommittedCheckpoint(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "checkpoint.db")
	db, err := checkpoint.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	wm := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	if err := db.CommitMany(context.Background(), map[record.Stream]checkpoint.State{
		{Source: "dns", Account: "acme"}: {Cursor: cursor.Cursor{Watermark: wm}, Delivered: 5},
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	got := Watermarks(t, path)
	if st := got[record.Stream{Source: "dns", Account: "acme"}]; len(got) != 1 || !st.Watermark.Equal(wm) || st.Delivered != 5 {
		t.Errorf("Watermarks = %+v", got)
	}
}

// The builds need Main (it removes them), and a build that fails fails
// the test with the compiler's output.
func TestBuilds(t *testing.T) {
	t.Parallel()
	errs := failures(t, func(tb testing.TB) { GoBuild(tb, Module+"/internal/no/such/package") })
	if len(errs) != 1 || !strings.Contains(errs[0], "no/such/package") {
		t.Errorf("a package that does not exist: %v", errs)
	}
}
