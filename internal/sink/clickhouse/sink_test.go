package clickhouse

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/clickhouse/schema"
	"github.com/svcexport/collector/internal/testinfra/chtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(chtest.Main(m)) }

var protocols = []string{ProtocolNative, ProtocolHTTP}

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func addrOf(srv *chtest.Server, protocol string) string {
	if protocol == ProtocolHTTP {
		return srv.HTTP
	}
	return srv.Native
}

// testConfig is a configuration for srv's database db.
func testConfig(srv *chtest.Server, protocol, db string) Config {
	cfg := DefaultConfig()
	cfg.Addr = []string{addrOf(srv, protocol)}
	cfg.Protocol = protocol
	cfg.Database = db
	cfg.FlushInterval = 20 * time.Millisecond
	cfg.QueryTimeout = 30 * time.Second
	cfg.DialTimeout = 5 * time.Second
	return cfg
}

// startSink starts a sink on cfg; it is shut down at the test's end.
func startSink(t testing.TB, cfg Config) (*Sink, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	s, err := New(cfg, reg, testLogger(t))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return s, reg
}

// openConn opens a driver connection for reading back; closed at the end.
func openConn(t testing.TB, addr string) driver.Conn {
	t.Helper()
	conn, err := ch.Open(&ch.Options{Addr: []string{addr}, DialTimeout: 5 * time.Second, ReadTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func specOf(source string) schema.Table {
	for _, s := range schema.Tables() {
		if s.Source == source {
			return s
		}
	}
	panic("no table for " + source)
}

// storedRow is a row read back.
type storedRow struct {
	account string
	time    time.Time
	record  string
	typed   map[string]any
}

// readTable reads every row of the table of source with FINAL, by id.
func readTable(t testing.TB, conn driver.Conn, db, source string) map[string]storedRow {
	t.Helper()
	spec := specOf(source)
	cols := []string{"id", "account", "time", "record"}
	for _, f := range spec.Fields {
		cols = append(cols, f.Column)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rows, err := conn.Query(ctx, fmt.Sprintf("SELECT %s FROM %s.%s FINAL", strings.Join(cols, ", "), db, source))
	if err != nil {
		t.Fatalf("read %s: %v", source, err)
	}
	defer rows.Close()
	out := map[string]storedRow{}
	for rows.Next() {
		var id string
		var r storedRow
		dest := []any{&id, &r.account, &r.time, &r.record}
		vals := make([]any, len(spec.Fields))
		for i, f := range spec.Fields {
			switch f.Kind {
			case schema.KindString:
				vals[i] = new(string)
			case schema.KindInt64:
				vals[i] = new(int64)
			case schema.KindTime:
				vals[i] = new(time.Time)
			case schema.KindIP:
				vals[i] = new(*netip.Addr)
			case schema.KindUInt8:
				vals[i] = new(*uint8)
			}
		}
		if err := rows.Scan(append(dest, vals...)...); err != nil {
			t.Fatalf("scan %s: %v", source, err)
		}
		r.typed = map[string]any{}
		for i, f := range spec.Fields {
			switch v := vals[i].(type) {
			case *string:
				r.typed[f.Column] = *v
			case *int64:
				r.typed[f.Column] = *v
			case *time.Time:
				r.typed[f.Column] = v.UTC()
			case **netip.Addr:
				r.typed[f.Column] = nil
				if *v != nil {
					r.typed[f.Column] = (*v).Unmap() // IPv6 holds IPv4 v4-mapped
				}
			case **uint8:
				r.typed[f.Column] = nil
				if *v != nil {
					r.typed[f.Column] = **v
				}
			}
		}
		if _, dup := out[id]; dup {
			t.Errorf("%s: id %s twice after FINAL", source, id)
		}
		out[id] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// writeAll writes batches concurrently and fails t on any error.
func writeAll(t testing.TB, s *Sink, batches []*record.Batch) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(batches))
	for _, b := range batches {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := s.Write(ctx, b); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Write: %v", err)
	}
	if t.Failed() {
		t.FailNow()
	}
}

func batchOf(source, account string, envs []record.Envelope, page int) *record.Batch {
	b := &record.Batch{Source: source, Account: account, Page: page, Envelopes: envs}
	if len(envs) > 0 {
		b.WindowStart, b.WindowEnd = envs[0].WindowStart, envs[0].WindowEnd
	}
	return b
}

// sourceData is the generated records of one source.
type sourceData struct {
	envs []record.Envelope
	want map[string]genRecord // by id
}

func generate(t testing.TB, source string, n int, base time.Time) sourceData {
	t.Helper()
	g := newGen(source, 42)
	d := sourceData{want: map[string]genRecord{}}
	ws, we := base, base.Add(90*24*time.Hour)
	fetched := base.Add(91 * 24 * time.Hour)
	for i := range n {
		// Seven hours apart: the records span several monthly partitions.
		r := g.record(base.Add(time.Duration(i) * 7 * time.Hour))
		e := envelope(t, source, []string{"acme", "acme-dev"}[i%2], r.raw, ws, we, fetched)
		d.envs = append(d.envs, e)
		d.want[e.ID] = r
	}
	for _, raw := range oddRecords(source, base.Add(time.Hour)) {
		e := envelope(t, source, "acme", raw, ws, we, fetched)
		d.envs = append(d.envs, e)
		d.want[e.ID] = genRecord{raw: raw, want: defaults(source)}
	}
	return d
}

func TestWriteEverySourceAndReadBack(t *testing.T) {
	t.Parallel()
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			srv := chtest.Get(t)
			db := srv.NewDatabase(t)
			s, reg := startSink(t, testConfig(srv, proto, db))
			base := time.Date(2026, 8, 20, 0, 0, 0, 0, time.UTC)

			data := map[string]sourceData{}
			var batches, again []*record.Batch
			total := 0
			for _, source := range schema.Sources() {
				d := generate(t, source, 240, base)
				data[source] = d
				var bs []*record.Batch
				for i := 0; i < len(d.envs); i += 40 {
					bs = append(bs, batchOf(source, "acme", d.envs[i:min(i+40, len(d.envs))], len(bs)))
				}
				batches = append(batches, bs...)
				// At least once: two pages come again as they were, and one
				// comes again cut differently (half of page 1 with half of 3).
				mixed := slices.Concat(bs[1].Envelopes[20:], bs[3].Envelopes[:20])
				again = append(again, bs[0], bs[2], batchOf(source, "acme", mixed, 99))
			}
			writeAll(t, s, batches)
			writeAll(t, s, again)
			for _, b := range slices.Concat(batches, again) {
				total += len(b.Envelopes)
			}
			records, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			if got := counter(records, "collector_sink_records_total"); got != float64(total) {
				t.Errorf("collector_sink_records_total = %v, want %d (every envelope of every acknowledged Write)", got, total)
			}

			conn := openConn(t, srv.Native)
			for _, source := range schema.Sources() {
				d := data[source]
				n := int64(len(d.want))
				if got := srv.QueryInt(t, fmt.Sprintf("SELECT uniqExact(id) FROM %s.%s", db, source)); got != n {
					t.Errorf("%s: %d distinct ids, want %d", source, got, n)
				}
				if got := srv.QueryInt(t, fmt.Sprintf("SELECT count() FROM %s.%s FINAL", db, source)); got != n {
					t.Errorf("%s: count() FINAL = %d, want %d distinct records", source, got, n)
				}
				rows := readTable(t, conn, db, source)
				byID := map[string]record.Envelope{}
				for _, e := range d.envs {
					byID[e.ID] = e
				}
				for id, w := range d.want {
					r, ok := rows[id]
					if !ok {
						t.Errorf("%s: record %s lost", source, id)
						continue
					}
					if r.record != string(w.raw) {
						t.Errorf("%s %s: record column\n got %s\nwant %s", source, id, r.record, w.raw)
					}
					e := byID[id]
					if !r.time.Equal(e.Time) || r.account != e.Account {
						t.Errorf("%s %s: time/account %v/%s, want %v/%s", source, id, r.time, r.account, e.Time, e.Account)
					}
					for col, want := range w.want {
						got := r.typed[col]
						if wt, ok := want.(time.Time); ok {
							if gt, _ := got.(time.Time); !gt.Equal(wt) {
								t.Errorf("%s %s: column %s = %v, want %v", source, id, col, got, want)
							}
							continue
						}
						if got != want {
							t.Errorf("%s %s: column %s = %#v, want %#v (record %s)", source, id, col, got, want, w.raw)
						}
					}
				}
			}
			if n := testutil.CollectAndCount(reg, MetricRowsInserted); n != len(schema.Sources()) {
				t.Errorf("%s has %d series, want one per table", MetricRowsInserted, n)
			}
		})
	}
}

// counter is the value of the one counter series of the family name in mfs.
func counter(mfs []*dto.MetricFamily, name string) float64 {
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return -1
}
