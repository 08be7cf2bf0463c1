package clickhouse

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/chtest"
)

// Benchmarks against the real server (chdb 26.7 launcher on the same
// machine; connections records of about 480 bytes of JSON in 5,000-row
// pages as the API sends them). Run without -race:
//
//	go test -run '^$' -bench 'BenchmarkInsert|BenchmarkAppendStyle' -benchtime 10x ./internal/sink/clickhouse/
//
// The figures measured on the project's 2-core machine, and the choice of
// batch_rows they led to, are in doc.go ("Throughput").

// cpuTicks is the user+system CPU time of process pid in clock ticks
// (/proc/PID/stat fields 14 and 15; 100 ticks a second on Linux).
func cpuTicks(pid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+2:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	return u + st, err1 == nil && err2 == nil
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchPages makes rows records of connections in 5,000-row pages.
func benchPages(b *testing.B, rows int) [][]record.Envelope {
	g := newGen("connections", 99)
	var bl record.Builder
	var pages [][]record.Envelope
	ws := testBase
	for len(pages)*5000 < rows {
		page := make([]record.Envelope, 0, 5000)
		for i := 0; i < 5000 && len(pages)*5000+i < rows; i++ {
			r := g.record(ws.Add(time.Duration(len(pages)*5000+i) * time.Second))
			e, flaw := bl.Build("connections", "acme", "startTime", ws, ws.Add(7*24*time.Hour), ws.Add(8*24*time.Hour), r.raw)
			if flaw != 0 {
				b.Fatal(flaw)
			}
			page = append(page, e)
		}
		pages = append(pages, page)
	}
	return pages
}

// renumber gives every envelope a new id (so that no insert repeats an
// earlier one and is dropped by its token) without rebuilding the records.
func renumber(pages [][]record.Envelope, iter int) {
	prefix := fmt.Sprintf("%08x", iter)
	for _, p := range pages {
		for i := range p {
			p[i].ID = prefix + p[i].ID[8:]
		}
	}
}

func BenchmarkInsert(b *testing.B) {
	for _, proto := range protocols {
		for _, rows := range []int{10_000, 50_000, 100_000} {
			b.Run(fmt.Sprintf("%s/%dk", proto, rows/1000), func(b *testing.B) {
				srv := chtest.Get(b)
				db := srv.NewDatabase(b)
				cfg := testConfig(srv, proto, db)
				cfg.BatchRows = rows
				// Inserts go when batch_rows is reached: batch_bytes (4
				// MiB, about one page) would cut them, and the last page
				// of each iteration would wait the minute.
				cfg.BatchBytes = MaxBatchBytes
				cfg.FlushInterval = time.Minute
				cfg.MaxOpenConns = 4
				s, _ := startSink(b, cfg)
				pages := benchPages(b, rows)
				bytes := 0
				for _, p := range pages {
					for _, e := range p {
						bytes += len(e.Record)
					}
				}
				pid := srv.PID()
				var wall, client time.Duration
				var server int64
				ctx := context.Background()
				b.ResetTimer()
				for i := range b.N {
					b.StopTimer()
					renumber(pages, i+1)
					b.StartTimer()
					t0, c0 := time.Now(), selfCPU()
					s0, _ := cpuTicks(pid)
					var wg sync.WaitGroup
					for j, p := range pages {
						wg.Go(func() {
							if err := s.Write(ctx, batchOf("connections", "acme", p, j)); err != nil {
								b.Error(err)
							}
						})
					}
					wg.Wait()
					wall += time.Since(t0)
					client += selfCPU() - c0
					if s1, ok := cpuTicks(pid); ok {
						server += s1 - s0
					}
				}
				b.StopTimer()
				total := float64(rows * b.N)
				b.ReportMetric(total/wall.Seconds(), "rows/s")
				b.ReportMetric(total/client.Seconds(), "rows/client-cpu-s")
				b.SetBytes(int64(bytes))
				if pid > 0 && server > 0 {
					b.ReportMetric(total/(float64(server)/100), "rows/server-cpu-s")
					b.ReportMetric(total/(client.Seconds()+float64(server)/100), "rows/cpu-s")
				}
				if got := count(b, srv, db, "connections", ""); got != int64(total) {
					b.Errorf("%d rows stored, want %v", got, total)
				}
			})
		}
	}
}

// BenchmarkAppendStyle compares appending whole columns (what the sink
// does) with appending row by row, 50,000 rows, native protocol.
func BenchmarkAppendStyle(b *testing.B) {
	srv := chtest.Get(b)
	db := srv.NewDatabase(b)
	s, _ := startSink(b, testConfig(srv, ProtocolNative, db))
	w := s.writers["connections"]
	pages := benchPages(b, 50_000)
	for _, style := range []string{"columns", "rows"} {
		b.Run(style, func(b *testing.B) {
			ctx := context.Background()
			for i := range b.N {
				b.StopTimer()
				renumber(pages, 1000+i+b.N*len(style))
				var group []part
				for j, p := range pages {
					group = append(group, whole(w.layout.newChunk(batchOf("connections", "acme", p, j)))...)
				}
				b.StartTimer()
				if style == "columns" {
					if err := w.send(ctx, group, dedupToken(w.table, group)); err != nil {
						b.Fatal(err)
					}
					continue
				}
				batch, err := s.conn.PrepareBatch(ch.Context(ctx, ch.WithSettings(ch.Settings{"insert_deduplicate": 0})), w.query)
				if err != nil {
					b.Fatal(err)
				}
				row := make([]any, len(w.cols))
				for _, p := range group {
					for r := 0; r < p.rows(); r++ {
						for k := range w.cols {
							row[k] = cell(p.column(k), r)
						}
						if err := batch.Append(row...); err != nil {
							b.Fatal(err)
						}
					}
				}
				if err := batch.Send(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(50_000*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

func cell(col any, r int) any {
	switch v := col.(type) {
	case []string:
		return v[r]
	case []int64:
		return v[r]
	case [][]byte:
		return v[r]
	}
	panic("column type")
}
