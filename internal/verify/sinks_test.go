package verify_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/clickhouse"
	"github.com/svcexport/collector/internal/sink/clickhouse/schema"
	"github.com/svcexport/collector/internal/sink/file"
	"github.com/svcexport/collector/internal/sink/kafka"
	"github.com/svcexport/collector/internal/testinfra/chtest"
	"github.com/svcexport/collector/internal/testinfra/harness"
	"github.com/svcexport/collector/internal/testinfra/kafkatest"
	"github.com/svcexport/collector/internal/verify"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(chtest.Main(m)) }

var (
	logins = record.Stream{Source: "audit_logs", Account: "acme"}
	// alerts is the edge stream: the edge API has no account selection
	// (C6), so it holds the alerts of every account.
	alerts = record.Stream{Source: "edge_alerts", Account: "edge"}
)

// scenario is three past days of two streams as the simulator serves them
// (C3, C6), and what a sink was given of them: everything, except 7
// records of the second audit-log day and 3 alerts of the first alert day;
// the first audit-log day twice (at-least-once repeats, C7); and a second
// version of 5 alerts (C6: an alert changes; its new version has a new
// id, the same uuid); and the 7 left out as inventory snapshots, which
// count for nothing.
type scenario struct {
	sim     *apisim.Server
	from    time.Time
	wm      time.Time // the watermark: the last day is cut at 19:00
	batches []*record.Batch
	dropped record.Envelope // one of the 7 audit logs left out
}

func newScenario(t *testing.T) *scenario {
	t.Helper()
	s := &scenario{sim: harness.StartSim(t, harness.QuickRates)}
	s.from = time.Now().UTC().Truncate(verify.Day).Add(-4 * verify.Day)
	s.wm = s.from.Add(2*verify.Day + 19*time.Hour)
	var bld record.Builder
	for day := range 3 {
		a, b := s.from.Add(time.Duration(day)*verify.Day), s.from.Add(time.Duration(day+1)*verify.Day)
		core := harness.APIRecords(t, s.sim, "/api/v2/AuditLogs/search", "acme", a, b)
		edge := edgeAlerts(t, s.sim, a, b)
		if len(core) < 100 || len(edge) < 50 {
			t.Fatalf("day %d: %d audit logs and %d alerts: too few to prove anything", day, len(core), len(edge))
		}
		if day == 1 {
			e, flaw := bld.Build(logins.Source, logins.Account, "createdTime", a, b, b.Add(time.Hour), core[0])
			if flaw != 0 {
				t.Fatal(flaw)
			}
			s.dropped = e
			// The 7 left out come as inventory snapshots (record.Envelope
			// Snapshot: time at the end of their own window): the state
			// of an entity, in no window the API counts, so they must not
			// fill the gap.
			at := a.Add(12 * time.Hour)
			snap := &record.Batch{Source: logins.Source, Account: logins.Account, WindowStart: at.Add(-time.Hour), WindowEnd: at}
			for _, raw := range core[:7] {
				e, _ := bld.Build(logins.Source, logins.Account, "createdTime", at.Add(-time.Hour), at, at, raw)
				e.Time, e.Snapshot = at, true
				snap.Envelopes = append(snap.Envelopes, e)
			}
			s.batches = append(s.batches, snap)
			core = core[7:]
		}
		if day == 0 {
			edge = edge[3:]
			for _, raw := range edge[:5] {
				edge = append(edge, updated(t, raw))
			}
		}
		batch := func(k record.Stream, field string, raws []json.RawMessage) *record.Batch {
			out := &record.Batch{Source: k.Source, Account: k.Account, WindowStart: a, WindowEnd: b}
			for _, raw := range raws {
				e, flaw := bld.Build(k.Source, k.Account, field, a, b, b.Add(time.Hour), raw)
				if flaw != 0 {
					t.Fatalf("record %s: flaw %v", raw, flaw)
				}
				out.Envelopes = append(out.Envelopes, e)
			}
			return out
		}
		s.batches = append(s.batches, batch(logins, "createdTime", core), batch(alerts, "create_time", edge))
		if day == 0 {
			s.batches = append(s.batches, batch(logins, "createdTime", core))
		}
	}
	return s
}

// edgeAlerts asks the simulator's edge API for the alerts created in
// [a, b) (C6).
func edgeAlerts(t *testing.T, sim *apisim.Server, a, b time.Time) []json.RawMessage {
	t.Helper()
	u := fmt.Sprintf("%s/api/v1/alerts?start_time=%d&end_time=%d&status_filter=OPEN,IN_PROGRESS,CLOSED", sim.EdgeURL(), a.UnixMilli(), b.UnixMilli())
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+apisim.DefaultConfig().EdgeToken)
	req.Header.Set("Account-Name", "acme")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %.300s (%v)", u, resp.StatusCode, body, err)
	}
	var out struct {
		Alerts []json.RawMessage `json:"alerts"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	return out.Alerts
}

// updated is another version of an alert: same uuid, a later update_time.
func updated(t *testing.T, raw json.RawMessage) json.RawMessage {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m["uuid"] == nil {
		t.Fatalf("alert %s: %v", raw, err)
	}
	m["status"] = "CLOSED"
	m["update_time"] = time.Now().UnixMilli()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// plan is the verify plan of the scenario's two streams.
func (s *scenario) plan() verify.Plan {
	return verify.NewPlan([]verify.StreamInfo{
		{Stream: logins, Start: s.from, State: checkpoint.State{Cursor: cursor.Cursor{Watermark: s.wm}}},
		{Stream: alerts, Edge: true, Start: s.from, State: checkpoint.State{Cursor: cursor.Cursor{Watermark: s.wm}}},
	}, verify.Filter{}, verify.Limits{Now: time.Now()})
}

// truth is the API's count as the simulator's /_truth gives it (C8).
func (s *scenario) truth() verify.Counter {
	return verify.CounterFunc(func(_ context.Context, k record.Stream, start, end time.Time) (int64, error) {
		if k == alerts {
			var sum int64
			for _, a := range s.sim.Accounts() {
				n, _ := s.sim.Truth(k.Source, a, start, end)
				sum += n
			}
			return sum, nil
		}
		n, _ := s.sim.Truth(k.Source, k.Account, start, end)
		if n < 0 {
			return 0, fmt.Errorf("no truth for %s", k)
		}
		return n, nil
	})
}

// check runs verify on what d holds and wants exactly the two gaps the
// scenario made.
func (s *scenario) check(t *testing.T, d verify.Delivered) {
	t.Helper()
	p := s.plan()
	if len(p.Targets) != 6 || p.Requests != 6 {
		t.Fatalf("plan %v", p)
	}
	r, err := verify.Run(context.Background(), p, s.truth(), d)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"audit_logs 1": 7, "edge_alerts 0": 3}
	for i, row := range r.Rows {
		k := fmt.Sprintf("%s %d", row.Source, i%3)
		if row.API-row.Delivered != want[k] || row.API < 100 && row.Source == "audit_logs" {
			t.Errorf("%s: API %d, delivered %d; want %d missing\n%s", k, row.API, row.Delivered, want[k], table.String())
		}
	}
	if r.Gaps != 2 || r.Extra != 0 || r.Missing != 10 || r.ExitCode() != 1 {
		t.Fatalf("report %+v\n%s", r, table.String())
	}
	t.Logf("\n%s", table.String())
}

// writeFiles writes the scenario's batches through a real file sink into
// dir, gzip or not.
func writeFiles(t *testing.T, s *scenario, dir string, gz bool) {
	t.Helper()
	cfg := file.DefaultConfig()
	cfg.Dir, cfg.Gzip, cfg.Fsync = dir, gz, false
	sk, err := file.New(cfg, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s.deliver(t, sk)
}

// deliver writes every batch of the scenario through sk, a real sink,
// between its Start and its Shutdown.
func (s *scenario) deliver(t *testing.T, sk sink.Sink) {
	t.Helper()
	ctx := context.Background()
	if err := sk.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, b := range s.batches {
		if err := sk.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := sk.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyFindsTheGapsOfTheFileSink(t *testing.T) {
	for _, gz := range []bool{false, true} {
		t.Run(fmt.Sprintf("gzip=%v", gz), func(t *testing.T) {
			s := newScenario(t)
			dir := t.TempDir()
			writeFiles(t, s, dir, gz)
			s.check(t, verify.FileSink{Dir: dir})
		})
	}
}

// A crash can leave a torn last line or gzip member: never acknowledged,
// never counted.
func TestTheFileSinkCountNeverCountsATornTail(t *testing.T) {
	s := newScenario(t)
	for _, gz := range []bool{false, true} {
		dir := t.TempDir()
		writeFiles(t, s, dir, gz)
		ctx := context.Background()
		before, err := verify.FileSink{Dir: dir}.Delivered(ctx, s.plan().Targets)
		if err != nil {
			t.Fatal(err)
		}
		// A file of the audit logs gets one of the left-out records
		// appended, torn: its line without the newline, or its gzip
		// member cut short (and the file named as being written).
		files, _ := filepath.Glob(filepath.Join(dir, "audit_logs", "acme", "*"))
		if len(files) == 0 {
			t.Fatal("no file written")
		}
		tail := s.dropped.AppendNDJSON(nil)
		torn := files[0]
		if gz {
			var zb bytes.Buffer
			zw := gzip.NewWriter(&zb)
			_, _ = zw.Write(tail)
			_ = zw.Close()
			tail = zb.Bytes()
			torn = strings.TrimSuffix(files[0], ".gz") + ".gz.part"
			if err := os.Rename(files[0], torn); err != nil {
				t.Fatal(err)
			}
		}
		f, err := os.OpenFile(torn, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(tail[:len(tail)-1]); err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
		after, err := verify.FileSink{Dir: dir}.Delivered(ctx, s.plan().Targets)
		if err != nil {
			t.Fatalf("gzip=%v: %v", gz, err)
		}
		for k, n := range before {
			if after[k] != n {
				t.Fatalf("gzip=%v: %v counted %d after the torn tail, %d before", gz, k, after[k], n)
			}
		}
		// The same tail whole is counted: the record is one more.
		f, err = os.OpenFile(torn, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if gz {
			// The torn member stays; a reader stops there (a .part file
			// ends with the member a crash cut), so start a new file.
			_ = f.Close()
			f, err = os.Create(strings.TrimSuffix(torn, ".ndjson.gz.part") + "-x.ndjson.gz")
			if err != nil {
				t.Fatal(err)
			}
		} else {
			_, _ = f.Write([]byte("\n"))
		}
		if gz {
			var zb bytes.Buffer
			zw := gzip.NewWriter(&zb)
			_, _ = zw.Write(s.dropped.AppendNDJSON(nil))
			_ = zw.Close()
			_, _ = f.Write(zb.Bytes())
		}
		_ = f.Close()
		whole, err := verify.FileSink{Dir: dir}.Delivered(ctx, s.plan().Targets)
		if err != nil {
			t.Fatal(err)
		}
		k := verify.Key{Stream: logins, Day: s.from.Add(verify.Day)}
		if whole[k] != before[k]+1 {
			t.Fatalf("gzip=%v: the whole tail counted %d, before %d", gz, whole[k], before[k])
		}
	}
}

func TestVerifyFindsTheGapsOfTheKafkaSink(t *testing.T) {
	s := newScenario(t)
	cluster := kafkatest.NewCluster(t)
	ctx := context.Background()
	var topics []string
	// One sink writes envelopes, one the raw records (format record), both
	// everything: the count reads an alert's uuid from either format.
	for _, format := range []string{kafka.FormatEnvelope, kafka.FormatRecord} {
		cfg := kafka.DefaultConfig()
		cfg.Brokers = cluster.ListenAddrs()
		cfg.CreateTopics = true
		cfg.Format = format
		cfg.Topic = format + ".{source}"
		topics = append(topics, format+".audit_logs", format+".edge_alerts")
		sk, err := kafka.New(cfg, []record.Stream{logins, alerts}, t.TempDir(), prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		// Both topics of a source hold the same records: counted once
		// each, by id or uuid, whatever the format.
		s.deliver(t, sk)
	}
	s.check(t, verify.Kafka{Opts: []kgo.Opt{kgo.SeedBrokers(cluster.ListenAddrs()...)}, Topics: topics})
	// A topic that was never written holds nothing: every day is a gap.
	r, err := verify.Run(ctx, s.plan(), s.truth(), verify.Kafka{Opts: []kgo.Opt{kgo.SeedBrokers(cluster.ListenAddrs()...)}, Topics: []string{"never.written"}})
	if err != nil || r.Gaps != 6 {
		t.Fatalf("a topic never written: %v, %+v", err, r)
	}
}

func TestVerifyFindsTheGapsOfTheClickHouseSink(t *testing.T) {
	s := newScenario(t)
	srv := chtest.Get(t)
	db := srv.NewDatabase(t)
	ctx := context.Background()
	cfg := clickhouse.DefaultConfig()
	cfg.Addr, cfg.Database, cfg.FlushInterval = []string{srv.Native}, db, 20*time.Millisecond
	sk, err := clickhouse.New(cfg, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s.deliver(t, sk)
	conn, err := ch.Open(&ch.Options{Addr: []string{srv.Native}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	s.check(t, verify.ClickHouse{Conn: conn, Names: schema.Options{Database: db}})
	// A table that was never made holds nothing: every day is a gap.
	r, err := verify.Run(ctx, s.plan(), s.truth(), verify.ClickHouse{Conn: conn, Names: schema.Options{Database: db, Prefix: "none_"}})
	if err != nil || r.Gaps != 6 {
		t.Fatalf("a database without the tables: %v, %+v", err, r)
	}
}

// A day whose files the file sink's retention deleted is reported as
// pruned, not as a gap (and exits 0); a real gap on another day still is
// one. The sink writes into time-partitioned directories, which verify
// finds through sink.file.path.
func TestVerifyReportsTheDaysTheFileSinkPrunedAsPruned(t *testing.T) {
	s := newScenario(t)
	// Retention counts files: the scenario's snapshots would be one more.
	s.batches = slices.DeleteFunc(s.batches, func(b *record.Batch) bool { return len(b.Envelopes) > 0 && b.Envelopes[0].Snapshot })
	dir := t.TempDir()
	cfg := file.DefaultConfig()
	cfg.Dir, cfg.Fsync = dir, false
	cfg.Path = "{source}/{account}/{yyyy}/{mm}/{dd}"
	cfg.MaxBytes = 1 // a file per batch
	sk, err := file.New(cfg, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s.deliver(t, sk)
	if left, _ := file.ReadPruned(dir, logins); len(left) != 0 {
		t.Fatalf("pruned without retention: %v", left)
	}
	// The next run keeps the newest 2 files of each stream: day 0 goes
	// (audit logs: its batch and its repeat; alerts: its one batch).
	cfg.Retention.MaxFiles = 2
	sk2, err := file.New(cfg, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := sk2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sk2.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if ps, _ := file.ReadPruned(dir, logins); len(ps) != 2 {
		t.Fatalf("%d audit-log files pruned, want 2: %+v", len(ps), ps)
	}

	d := verify.FileSink{Dir: dir, Path: cfg.Path}
	r, err := verify.Run(ctx, s.plan(), s.truth(), d)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	_ = r.WriteTable(&table)
	want := map[string]string{
		"audit_logs 0": verify.StatusPruned, "audit_logs 1": verify.StatusGap, "audit_logs 2": verify.StatusOK,
		"edge_alerts 0": verify.StatusPruned, "edge_alerts 1": verify.StatusOK, "edge_alerts 2": verify.StatusOK,
	}
	for i, row := range r.Rows {
		k := fmt.Sprintf("%s %d", row.Source, i%3)
		if row.Status != want[k] {
			t.Errorf("%s: %s, want %s\n%s", k, row.Status, want[k], table.String())
		}
	}
	if r.Gaps != 1 || r.Pruned != 2 || r.Missing != 7 || r.ExitCode() != 1 || !strings.Contains(table.String(), "2 pruned by the sink's retention") {
		t.Fatalf("report %+v\n%s", r, table.String())
	}
	// Day 0 alone: pruned only, exit 0.
	day0 := verify.NewPlan([]verify.StreamInfo{
		{Stream: logins, Start: s.from, State: checkpoint.State{Cursor: cursor.Cursor{Watermark: s.wm}}},
		{Stream: alerts, Edge: true, Start: s.from, State: checkpoint.State{Cursor: cursor.Cursor{Watermark: s.wm}}},
	}, verify.Filter{From: s.from, To: s.from.Add(verify.Day)}, verify.Limits{Now: time.Now()})
	r0, err := verify.Run(ctx, day0, s.truth(), d)
	if err != nil {
		t.Fatal(err)
	}
	if len(r0.Rows) != 2 || r0.Pruned != 2 || r0.Gaps != 0 || r0.ExitCode() != 0 {
		t.Errorf("day 0 alone: %+v", r0)
	}
	t.Logf("\n%s", table.String())
}
