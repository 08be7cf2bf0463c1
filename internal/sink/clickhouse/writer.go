package clickhouse

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/svcexport/collector/internal/backoff"
	"github.com/svcexport/collector/internal/sink/clickhouse/schema"
	"github.com/svcexport/collector/internal/sink/sinkhelper"
)

// tableWriter gathers the chunks of one table into inserts and sends them,
// one insert at a time, from its own goroutine (run). Chunks keep the order
// in which Writes handed them in; an insert takes whole chunks from the
// front until the next would pass batch_rows or batch_bytes, so the same
// sequence of Writes gives the same inserts. A chunk that alone passes
// either bound is inserted in parts, each as many rows as fit (at least
// one), one insert after the other; its Write returns once every part was
// stored, or at the first that failed.
type tableWriter struct {
	s      *Sink
	table  string // table name (prefix included): metric label and token salt
	layout *layout
	cols   []schema.Column
	query  string
	// httpCols are the insert's columns with the types the server has, so
	// that an HTTP insert needs no DESCRIBE round trip.
	httpCols []ch.ColumnNameAndType

	mu      sync.Mutex
	pending []*chunk
	rows    int // rows of pending no insert took yet
	bytes   int // their estimated bytes
	closed  bool

	wake chan struct{} // capacity 1
	done chan struct{} // closed when run returns
}

func newTableWriter(s *Sink, t schema.Table) *tableWriter {
	w := &tableWriter{
		s:      s,
		table:  s.names.Table(t.Source),
		layout: newLayout(t),
		cols:   t.Columns(),
		query:  schema.InsertSQL(s.names, t),
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
	if s.exactlyOnce() {
		// The ledger's column (ledger.go), after every column of the
		// schema.
		w.cols = append(w.cols, schema.Column{Name: BatchColumn, Type: batchColumnType})
		w.query = strings.TrimSuffix(w.query, ")") + ", `" + BatchColumn + "`)"
	}
	return w
}

func (w *tableWriter) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// enqueue hands c to the next insert.
func (w *tableWriter) enqueue(c *chunk) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return sinkhelper.ErrClosed
	}
	c.arrived = time.Now()
	w.pending = append(w.pending, c)
	w.rows += c.rows
	w.bytes += c.bytes
	wake := len(w.pending) == 1 || w.full()
	w.mu.Unlock()
	if wake {
		w.poke()
	}
	return nil
}

// full reports whether the rows pending make an insert of their own
// (w.mu held).
func (w *tableWriter) full() bool {
	return w.rows >= w.s.cfg.BatchRows || w.bytes >= w.s.cfg.BatchBytes
}

// withdraw takes back what no insert took yet of c (its Write gave up), so
// that rows nobody waits for are not inserted. It reports whether none of
// c's rows went to an insert.
func (w *tableWriter) withdraw(c *chunk) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dropLocked(c)
	return c.next == 0
}

// dropLocked removes c from pending, if it is there, with its rows that no
// insert took (w.mu held).
func (w *tableWriter) dropLocked(c *chunk) {
	for i, p := range w.pending {
		if p == c {
			w.pending = append(w.pending[:i], w.pending[i+1:]...)
			w.rows -= c.rows - c.next
			w.bytes -= c.cum[c.rows] - c.cum[c.next]
			return
		}
	}
}

// close stops taking chunks; run then sends what is pending at once and
// returns.
func (w *tableWriter) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.poke()
}

// run sends inserts until close was called and nothing is pending. ctx is
// cancelled only when a Shutdown runs out of time: attempts in flight end,
// and every chunk still pending fails.
func (w *tableWriter) run(ctx context.Context) {
	defer close(w.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		w.mu.Lock()
		group, wait := w.takeLocked(time.Now())
		closed := w.closed
		w.mu.Unlock()
		if group != nil {
			w.insert(ctx, group)
			continue
		}
		if wait < 0 && closed {
			return
		}
		if wait > 0 {
			timer.Reset(wait)
		}
		select {
		case <-w.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// takeLocked returns the parts of the next insert when one is due (enough
// rows or bytes, the oldest chunk waited flush_interval or is partly
// inserted already, or closing), else nil and how long until the oldest
// chunk is due (-1 when nothing is pending).
func (w *tableWriter) takeLocked(now time.Time) ([]part, time.Duration) {
	if len(w.pending) == 0 {
		return nil, -1
	}
	limit, maxBytes := w.s.cfg.BatchRows, w.s.cfg.BatchBytes
	first := w.pending[0]
	due := first.arrived.Add(w.s.cfg.FlushInterval)
	if !w.closed && !w.full() && first.next == 0 && now.Before(due) {
		return nil, due.Sub(now)
	}
	var group []part
	rows, size := 0, 0
	for len(w.pending) > 0 {
		c := w.pending[0]
		p := part{c: c, lo: c.next, hi: c.rows}
		if len(group) > 0 && (rows+p.rows() > limit || size+p.bytes() > maxBytes) {
			break
		}
		if len(group) == 0 && (p.rows() > limit || p.bytes() > maxBytes) {
			p.hi = c.cut(p.lo, limit, maxBytes)
		}
		group = append(group, p)
		rows += p.rows()
		size += p.bytes()
		c.next = p.hi
		if c.next < c.rows {
			break // the rest of c goes in the next insert
		}
		w.pending[0] = nil
		w.pending = w.pending[1:]
	}
	if len(w.pending) == 0 {
		w.pending = nil // let the backing array go
	}
	w.rows -= rows
	w.bytes -= size
	return group, 0
}

// insert sends the rows of group as one insert and tells every chunk the
// outcome. When the server refuses the insert for good and it holds the
// rows of several Writes, each Write's rows are inserted alone, so that
// only rows the server refuses by themselves fail for good.
func (w *tableWriter) insert(ctx context.Context, group []part) {
	err := w.attempt(ctx, group)
	if forGood, _ := refusal(err); forGood && len(group) > 1 {
		w.s.log.Warn("clickhouse refused an insert of several writes for good; inserting each alone",
			slog.String("table", w.table), slog.Int("writes", len(group)), slog.Any("error", err))
		for _, p := range group {
			w.settle(p, w.attempt(ctx, []part{p}))
		}
		return
	}
	for _, p := range group {
		w.settle(p, err)
	}
}

// settle records the outcome of the insert that held p: the chunk's Write
// learns the first error, or nil once its last rows are stored. After an
// error, the chunk's rows no insert took yet are dropped.
func (w *tableWriter) settle(p part, err error) {
	c := p.c
	if c.failed {
		return
	}
	if err != nil {
		c.failed = true
		w.mu.Lock()
		w.dropLocked(c)
		w.mu.Unlock()
		c.done <- err
		return
	}
	c.landed += p.rows()
	if c.landed == c.rows {
		c.done <- nil
	}
}

// attempt sends the rows of group as one insert, repeating the identical
// insert (same rows, same order, same insert_deduplication_token) up to
// insert_attempts times unless the server refused it (refusal).
func (w *tableWriter) attempt(ctx context.Context, group []part) error {
	rows, size := 0, 0
	for _, p := range group {
		rows += p.rows()
		size += p.bytes()
	}
	token := dedupToken(w.table, group)
	var err error
	attempts := 0
	for attempts < w.s.cfg.InsertAttempts && ctx.Err() == nil {
		if attempts > 0 {
			w.s.log.Warn("clickhouse insert failed; repeating the same insert",
				slog.String("table", w.table), slog.Int("rows", rows), slog.Int("attempt", attempts+1), slog.Any("error", err))
			if !sleepCtx(ctx, repeatWait(attempts-1)) {
				break
			}
		}
		attempts++
		// Scrubbed here, before the log lines and the Writes see it.
		err = w.s.scrub.Error(w.send(ctx, group, token))
		if err == nil {
			m := w.s.m
			m.rows.WithLabelValues(w.table).Add(float64(rows))
			m.bytes.WithLabelValues(w.table).Add(float64(size))
			m.inserts.WithLabelValues(w.table).Inc()
			m.rowsPerIn.Observe(float64(rows))
			return nil
		}
		w.s.m.errors.WithLabelValues(w.table).Inc()
		if forGood, login := refusal(err); forGood || login {
			break
		}
	}
	if err == nil {
		err = ctx.Err()
	}
	err = fmt.Errorf("insert %d rows into %s (attempt %d of %d, insert_deduplication_token %s): %w",
		rows, w.s.names.Qualified(w.layout.table.Source), attempts, w.s.cfg.InsertAttempts, token, err)
	w.s.log.Error("clickhouse insert failed", slog.String("table", w.table), slog.Int("rows", rows), slog.Any("error", err))
	return err
}

// send makes one attempt at the insert.
func (w *tableWriter) send(ctx context.Context, group []part, token string) (err error) {
	start := time.Now()
	defer func() { w.s.m.duration.WithLabelValues(w.table).Observe(time.Since(start).Seconds()) }()
	ctx, cancel := context.WithTimeout(ctx, w.s.cfg.QueryTimeout)
	defer cancel()
	settings := insertSettings(w.s.cfg, token)
	opts := []ch.QueryOption{ch.WithSettings(settings)}
	if w.s.cfg.Protocol == ProtocolHTTP && len(w.httpCols) > 0 {
		opts = append(opts, ch.WithColumnNamesAndTypes(w.httpCols))
	}
	batch, err := w.s.conn.PrepareBatch(ch.Context(ctx, opts...), w.query)
	if err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	defer func() {
		if !batch.IsSent() {
			_ = batch.Abort()
		}
	}()
	// The insert goes in blocks (insertBlockBytes), each sent (Flush: a
	// data packet of the same insert) before the next is appended: the
	// driver holds one block's columns and encoding at a time, not the
	// whole insert's. The server gathers the blocks of an insert into one
	// (they are far below min_insert_block_size_rows and _bytes), so the
	// insert is stored, and a repeat deduplicated (C7), as when it went in
	// one block. Over HTTP Flush sends nothing: the driver holds the whole
	// insert as before.
	for i, blk := range blocks(group, min(w.s.blockBytes, w.s.cfg.BatchBytes)) {
		if i > 0 {
			if err := batch.Flush(); err != nil {
				return fmt.Errorf("send block %d: %w", i, err)
			}
		}
		if err := appendColumns(batch, w.cols, blk); err != nil {
			return err
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	return nil
}

// insertSettings are the settings of every insert of cfg with the
// deduplication token token.
func insertSettings(cfg Config, token string) ch.Settings {
	settings := ch.Settings{
		"insert_deduplicate":         1,
		"insert_deduplication_token": token,
		// Rows of one insert come from windows of at most a few months;
		// a wild record time must not make an insert fail for good
		// (the default limit is 100 partitions an insert).
		"max_partitions_per_insert_block": 0,
	}
	if cfg.Cluster != "" {
		// The Distributed table forwards the insert, settings and token
		// included, to the shards and answers once each stored its rows
		// (distributed_foreground_insert; this older name works on every
		// supported server). Queued in the background instead, the rows
		// would count as written before any shard had them, and a
		// repeat could be batched differently (docs/clickhouse.md).
		settings["insert_distributed_sync"] = 1
	}
	if cfg.AsyncInsert {
		settings["async_insert"] = 1
		settings["wait_for_async_insert"] = 1
		settings["async_insert_deduplicate"] = 1
	}
	return settings
}

// insertBlockBytes is about the most bytes (the chunks' estimate) of one
// block of an insert: what the driver holds of an insert at a time is
// about three times one block, not three times batch_bytes. Smaller
// blocks also cost the collector less CPU a row (the driver's buffers no
// longer grow to the insert's size): BenchmarkInsert, native, rows per CPU
// second of the collector, whole inserts 81k-97k, 1 MiB blocks 186k-220k,
// 256 KiB blocks 218k-279k; the server's CPU a row did not change.
const insertBlockBytes = 256 << 10

// blocks splits the rows of group, in order, into runs of at most
// maxBytes bytes (chunk.cum), each at least one row: the blocks of one
// insert. The same group gives the same blocks, so a repeated insert is
// the same data packets.
func blocks(group []part, maxBytes int) [][]part {
	var out [][]part
	var cur []part
	size := 0
	for _, p := range group {
		for lo := p.lo; lo < p.hi; {
			room := maxBytes - size
			hi := p.c.cut(lo, p.hi-lo, room)
			n := p.c.cum[hi] - p.c.cum[lo]
			if len(cur) > 0 && n > room {
				// Not even its first row fits: it opens the next block.
				out, cur, size = append(out, cur), nil, 0
				continue
			}
			cur = append(cur, part{c: p.c, lo: lo, hi: hi})
			size += n
			lo = hi
			if lo < p.hi {
				out, cur, size = append(out, cur), nil, 0
			}
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// appendColumns appends the parts' columns to batch, column by column.
func appendColumns(batch driver.Batch, cols []schema.Column, group []part) error {
	for i, c := range cols {
		col := batch.Column(i)
		for _, p := range group {
			if err := col.Append(p.column(i)); err != nil {
				return fmt.Errorf("append column %s: %w", c.Name, err)
			}
		}
	}
	return nil
}

// repeatWait is the pause before repeat n (from 0) of an insert: 250ms,
// 500ms, 1s, ... up to 5s, each drawn from its upper half.
func repeatWait(n int) time.Duration {
	return backoff.Policy{Initial: 250 * time.Millisecond, Max: 5 * time.Second, Jitter: backoff.Equal}.Wait(n)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
