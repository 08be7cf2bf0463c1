package clickhouse

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/chtest"
)

// BenchmarkConnectionsIPSearch loads a million connection records through
// the sink and prints the server time and the rows and bytes read of "who
// talked to this address" asked three ways: through the typed columns
// (has(dst_ips, ...), served by their bloom filter), through the JSON of
// the record (JSONExtract of endpointDetails, what was needed before), and
// with a plain text match of the record (LIKE: the cheapest scan, not an
// exact answer in general). Run alone, without -race:
//
//	go test -run '^$' -bench BenchmarkConnectionsIPSearch -benchtime 1x -timeout 30m ./internal/sink/clickhouse/
//
// IP_BENCH_ROWS (default 1000000) is the number of records. They are
// spread over 30 days of one account, one to three endpoints each,
// destinations drawn with Zipf's law from 200,000 public addresses (a few
// everywhere, most rare), sources from 3,000 machines; the address asked
// for has a few dozen connections. The table is merged (OPTIMIZE FINAL)
// before measuring. The figures measured are in docs/clickhouse.md.
func BenchmarkConnectionsIPSearch(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("IP_BENCH_ROWS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1000 {
			b.Fatalf("IP_BENCH_ROWS=%q", s)
		}
	}
	srv := chtest.Get(b)
	db := srv.NewDatabase(b)
	cfg := testConfig(srv, ProtocolNative, db)
	cfg.FlushInterval = 200 * time.Millisecond
	s, _ := startSink(b, cfg)

	const dsts, machines = 200_000, 3_000
	dstIP := func(k uint64) string { return fmt.Sprintf("%d.%d.%d.%d", 20+k>>16%200, k>>8%256, k%256, 1+k%250) }
	srcIP := func(k int) string { return fmt.Sprintf("10.%d.%d.%d", k>>8%256, k%256, 1+k%250) }
	end := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	start := end.Add(-30 * 24 * time.Hour)

	loadStart := time.Now()
	pages := make(chan *record.Batch, 32)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for p := range pages {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				err := s.Write(ctx, p)
				cancel()
				if err != nil {
					b.Error(err)
				}
			}
		})
	}
	r := rand.New(rand.NewPCG(7, 33))
	zipf := rand.NewZipf(r, 1.05, 2, dsts-1)
	var bl record.Builder
	var page []record.Envelope
	var raw strings.Builder
	for i := range n {
		t := start.Add(time.Duration(int64(i) * int64(30*24*time.Hour) / int64(n)))
		raw.Reset()
		fmt.Fprintf(&raw, `{"dstEntityId":{"mid":%d,"pid_hash":"%016x"},"dstEntityType":"Process","dstInBytes":%d,"dstOutBytes":%d,"endpointDetails":[`,
			r.IntN(machines), r.Uint64(), r.IntN(1e6), r.IntN(1e6))
		src := srcIP(r.IntN(machines))
		for k, m := 0, 1+r.IntN(3); k < m; k++ {
			if k > 0 {
				raw.WriteByte(',')
			}
			fmt.Fprintf(&raw, `{"dst_ip_addr":"%s","dst_port":443,"protocol":"TCP","src_ip_addr":"%s"}`, dstIP(zipf.Uint64()), src)
		}
		fmt.Fprintf(&raw, `],"startTime":"%s","endTime":"%s","numConns":%d,"srcEntityId":{"mid":%d,"pid_hash":"%016x"},"srcEntityType":"Process","srcInBytes":%d,"srcOutBytes":%d}`,
			iso(t), iso(t.Add(time.Minute)), 1+r.IntN(500), r.IntN(machines), r.Uint64(), r.IntN(1e6), r.IntN(1e6))
		e, flaw := bl.Build("connections", "acme", "startTime", t.Truncate(time.Hour), t.Truncate(time.Hour).Add(time.Hour), t.Add(time.Hour), []byte(raw.String()))
		if flaw != 0 {
			b.Fatalf("record %s: %v", raw.String(), flaw)
		}
		page = append(page, e)
		if len(page) == 5000 {
			pages <- batchOf("connections", "acme", page, 0)
			page = nil
		}
	}
	if len(page) > 0 {
		pages <- batchOf("connections", "acme", page, 0)
	}
	close(pages)
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	load := time.Since(loadStart)
	srv.Exec(b, "OPTIMIZE TABLE "+db+".connections FINAL")
	waitMerges(b, srv, db)

	// An address with a few dozen connections: the usual search.
	ip := srv.Query(b, "SELECT toString(a) FROM (SELECT arrayJoin(dst_ips) AS a FROM "+db+".connections) GROUP BY a HAVING count() BETWEEN 20 AND 60 ORDER BY a LIMIT 1")
	ip = strings.TrimPrefix(ip, "::ffff:")
	if ip == "" {
		b.Fatal("no address with 20 to 60 connections")
	}
	tbl := db + ".connections"
	queries := []struct{ name, sql string }{
		{"typed: has(dst_ips, ...)", "SELECT count() FROM " + tbl + " WHERE has(dst_ips, toIPv6('" + ip + "'))"},
		{"JSON: JSONExtract of endpointDetails", "SELECT count() FROM " + tbl + " WHERE arrayExists(e -> JSONExtractString(e, 'dst_ip_addr') = '" + ip + "', JSONExtractArrayRaw(record, 'endpointDetails'))"},
		{"text: record LIKE", "SELECT count() FROM " + tbl + " WHERE record LIKE '%\"dst_ip_addr\":\"" + ip + "\"%'"},
		{"typed, either end (OR)", "SELECT count() FROM " + tbl + " WHERE has(dst_ips, toIPv6('" + ip + "')) OR has(src_ips, toIPv6('" + ip + "'))"},
	}
	var report strings.Builder
	fmt.Fprintf(&report, "\n%d connection records loaded through the sink in %s (%.0f rows/s); address %s\n", n, load.Round(time.Millisecond), float64(n)/load.Seconds(), ip)
	fmt.Fprintf(&report, "%-36s | %10s %12s %10s | %6s\n", "query (median of 7 runs)", "ms", "rows read", "MB read", "count")
	var first string
	for i, q := range queries {
		run := runQuery(b, srv, q.sql)
		if i == 0 {
			first = run.result
		} else if run.result != first {
			b.Errorf("%s answers %q, the typed columns %q", q.name, strings.TrimSpace(run.result), strings.TrimSpace(first))
		}
		fmt.Fprintf(&report, "%-36s | %10.1f %12d %10.1f | %6s\n", q.name, run.ms, run.readRows, float64(run.readBytes)/1e6, strings.TrimSpace(run.result))
		b.ReportMetric(run.ms, fmt.Sprintf("ms/q%d", i+1))
	}
	sizes := srv.Query(b, "SELECT column, formatReadableSize(sum(column_data_compressed_bytes)), formatReadableSize(sum(column_data_uncompressed_bytes)) FROM system.parts_columns WHERE database = '"+db+"' AND table = 'connections' AND active AND column IN ('record', 'src_ips', 'dst_ips') GROUP BY column ORDER BY column")
	idx := srv.Query(b, "SELECT name, formatReadableSize(data_compressed_bytes) FROM system.data_skipping_indices WHERE database = '"+db+"' AND table = 'connections' AND name LIKE 'bf_%' ORDER BY name")
	fmt.Fprintf(&report, "columns (compressed, uncompressed):\n%s\nskip indexes:\n%s\n", sizes, idx)
	fmt.Println(report.String()) // whole: b.Log cuts a benchmark's log at ten lines
}
