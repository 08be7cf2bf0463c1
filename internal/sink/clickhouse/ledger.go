package clickhouse

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/clickhouse/schema"
	"github.com/svcexport/collector/internal/sink/sinkhelper"
)

// The ClickHouse sink's ledger (sink.Ledger). Every table gets a column
// _inserted DateTime64(3) DEFAULT now64(3), the server's time of the
// insert, with a minmax index. The mark is a time at or before the insert
// of every row of a batch the checkpoint does not cover: the hand-over
// time of the oldest such batch (or the time of the mark when there is
// none), in the server's clock, less a slack. After a crash Recover reads the ids of
// the rows inserted since the mark: the pipeline does not write those to
// ClickHouse again, so no row is stored twice and count() needs no FINAL.
// Over-reading is harmless (rows the checkpoint covers are never written
// again anyway).

var _ sink.Ledger = (*Sink)(nil)

// InsertedColumn is the column that holds a row's insert time, and
// BatchColumn the one that names its batch: RUN/SEQ/ACCOUNT, the run (a
// random id per start), the batch's Seq and its stream's account.
const (
	InsertedColumn  = "_inserted"
	BatchColumn     = "_batch"
	batchColumnType = "LowCardinality(String)"
)

// markSlack is taken off every mark: the clocks of the collector and of
// the server, compared once at start, may drift by this much.
const markSlack = 5 * time.Second

// chMark is the mark: rows inserted since Since (server time, Unix
// milliseconds) whose _batch names Run and a Seq at or past their
// stream's Covered are the ones the checkpoint does not cover. Rows of
// other runs were resolved before this mark or the checkpoint holds them
// (sink.Held).
type chMark struct {
	Version int   `json:"v"`
	Since   int64 `json:"since_ms"`
	sinkhelper.Covered
}

const chMarkVersion = 2

// chLedger is the sink's side of the protocol.
type chLedger struct {
	mu        sync.Mutex
	skew      time.Duration                   // server clock - local clock, measured at start
	uncovered sinkhelper.Uncovered[time.Time] // when each uncovered batch was handed over
	cov       *sinkhelper.Coverage            // the run and what the commits covered (BatchColumn)
}

// Delivery implements sink.Ledger.
func (s *Sink) Delivery() string { return s.cfg.delivery() }

func (s *Sink) exactlyOnce() bool { return s.cfg.delivery() == sink.DeliveryExactlyOnce }

// handedOver records that the batch b is about to be inserted and
// returns the _batch value of its rows ("" without the ledger).
func (s *Sink) handedOver(b *record.Batch) string {
	if !s.exactlyOnce() {
		return ""
	}
	k := b.Stream()
	s.led.mu.Lock()
	defer s.led.mu.Unlock()
	s.led.uncovered.Handed(k, b.Seq, time.Now())
	return s.led.cov.BatchName(b)
}

// Mark implements sink.Ledger.
func (s *Sink) Mark(_ context.Context, next map[record.Stream]uint64) ([]byte, error) {
	if !s.exactlyOnce() {
		return nil, nil
	}
	s.led.mu.Lock()
	defer s.led.mu.Unlock()
	s.led.uncovered.Cover(next)
	since := time.Now()
	for at := range s.led.uncovered.All() {
		if at.Before(since) {
			since = at
		}
	}
	return json.Marshal(chMark{Version: chMarkVersion, Since: since.Add(s.led.skew - markSlack).UnixMilli(), Covered: s.led.cov.Advance(next)})
}

// prepareLedger adds the _inserted column and its index to every table
// (in place: older rows get the time of the change) and measures the
// clock skew. Start calls it.
func (s *Sink) prepareLedger(ctx context.Context) error {
	if !s.exactlyOnce() {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	for _, t := range schema.Tables() {
		table := s.names.Qualified(t.Source)
		for _, q := range []string{
			"ALTER TABLE " + table + " ADD COLUMN IF NOT EXISTS " + InsertedColumn + " DateTime64(3) DEFAULT now64(3) CODEC(Delta, ZSTD(1))",
			"ALTER TABLE " + table + " ADD INDEX IF NOT EXISTS " + InsertedColumn + "_idx " + InsertedColumn + " TYPE minmax GRANULARITY 1",
			"ALTER TABLE " + table + " ADD COLUMN IF NOT EXISTS " + BatchColumn + " " + batchColumnType + " DEFAULT ''",
		} {
			if err := s.conn.Exec(cctx, q); err != nil {
				return fmt.Errorf("clickhouse: prepare %s for delivery exactly_once: %w", table, err)
			}
		}
	}
	before := time.Now()
	var server time.Time
	if err := s.conn.QueryRow(cctx, "SELECT now64(3)").Scan(&server); err != nil {
		return fmt.Errorf("clickhouse: read the server's clock: %w", err)
	}
	s.led.mu.Lock()
	s.led.skew = server.Sub(before.Add(time.Since(before) / 2))
	s.led.mu.Unlock()
	return nil
}

// Recover implements sink.Ledger: the rows inserted since the mark, by
// stream (their id and time column, sink.Held; nothing without a mark).
func (s *Sink) Recover(ctx context.Context, mark []byte) (sink.Held, error) {
	s.led.mu.Lock()
	s.led.uncovered.Reset()
	s.led.mu.Unlock()
	s.led.cov.Reset()
	if !s.exactlyOnce() || mark == nil {
		return nil, nil
	}
	var m chMark
	if err := json.Unmarshal(mark, &m); err != nil || m.Version != chMarkVersion {
		return nil, fmt.Errorf("clickhouse: the checkpoint's mark of this sink is unreadable (version %d): %v", m.Version, err)
	}
	uncovered := m.Covered.Uncovered()
	began := time.Now()
	if err := s.awaitOrphanInserts(ctx); err != nil {
		return nil, err
	}
	out := sink.Held{}
	n := 0
	for _, t := range schema.Tables() {
		table := s.names.Qualified(t.Source)
		cctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
		rows, err := s.conn.Query(cctx, "SELECT "+BatchColumn+", id, time FROM "+table+" WHERE "+InsertedColumn+" >= fromUnixTimestamp64Milli(?) AND startsWith("+BatchColumn+", ?)", m.Since, m.Run+"/")
		if err != nil {
			cancel()
			return nil, fmt.Errorf("clickhouse: recover: read back %s: %w", table, err)
		}
		for rows.Next() {
			var batch, id string
			var at time.Time
			if err := rows.Scan(&batch, &id, &at); err != nil {
				rows.Close()
				cancel()
				return nil, fmt.Errorf("clickhouse: recover: read back %s: %w", table, err)
			}
			if k, ok := uncovered(t.Source, batch); ok {
				// The time column is the record time (clamped to
				// what DateTime64 holds; the key's id hash still
				// names the record).
				sinkhelper.Add(out, k, id, at)
				n++
			}
		}
		err = rows.Err()
		rows.Close()
		cancel()
		if err != nil {
			return nil, fmt.Errorf("clickhouse: recover: read back %s: %w", table, err)
		}
	}
	s.m.readBackRows.Add(float64(n))
	s.m.readBackSeconds.Add(time.Since(began).Seconds())
	s.log.Info("clickhouse sink: read back the rows inserted past the checkpoint", "rows", n, "took", time.Since(began).Round(time.Millisecond))
	return out, nil
}

// awaitOrphanInserts waits, up to the query timeout, until the server runs
// no insert into this sink's database: a collector killed while the
// server was still storing its insert leaves it running, and its rows must
// be there before the read-back looks.
func (s *Sink) awaitOrphanInserts(ctx context.Context) error {
	deadline := time.Now().Add(s.cfg.QueryTimeout)
	q := s.names.Qualified("x")
	prefix := "INSERT INTO " + q[:strings.LastIndex(q, ".")+1]
	for {
		cctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
		var n uint64
		err := s.conn.QueryRow(cctx, "SELECT count() FROM system.processes WHERE startsWith(query, ?)", prefix).Scan(&n)
		cancel()
		if err != nil {
			return fmt.Errorf("clickhouse: recover: read system.processes: %w", err)
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("clickhouse: recover: %d inserts into %s still run after %v (a collector killed during an insert?); try again later", n, s.cfg.Database, s.cfg.QueryTimeout)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("clickhouse: recover: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
