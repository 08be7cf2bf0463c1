package clickhouse

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/sinkmetrics"
)

// MinServerVersion is the oldest ClickHouse release Start accepts (see the
// package documentation).
const MinServerVersion = "24.8"

// SinkName is the value of the "sink" label of the shared sink metrics.
const SinkName = "clickhouse"

var _ sink.Sink = (*Sink)(nil)

// Lifecycle states of a Sink.
const (
	stateNew = iota
	stateStarted
	stateStopping
	stateStopped
)

// Sink writes batches into one ClickHouse table per source. Build it with
// New; the zero value is not usable. Write, Ready and Check are safe for
// concurrent use; Start is called once; Shutdown is safe to call twice and
// without Start.
type Sink struct {
	cfg   Config
	names names
	log   *slog.Logger
	m     *metrics
	sm    *sinkmetrics.Metrics
	opts  *ch.Options

	mu       sync.RWMutex
	state    int
	conn     driver.Conn
	writers  map[string]*tableWriter
	cancel   context.CancelFunc // ends inserts in flight (forced shutdown)
	stopped  chan struct{}      // closed when Shutdown finished
	version  string
	stopOnce sync.Once
}

// New checks cfg, reads the password file and the TLS files, and registers
// the metrics with reg (nil: metrics nobody exports). It does not connect:
// Start does. log may be nil (no logs).
func New(cfg Config, reg prometheus.Registerer, log *slog.Logger) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With(slog.String("sink", SinkName))
	pw, err := secret.Resolve(cfg.Password.Reveal(), cfg.PasswordFile)
	if err != nil {
		return nil, fmt.Errorf("sink.clickhouse.password_file: %w", err)
	}
	tlsCfg, err := cfg.TLS.build()
	if err != nil {
		return nil, err
	}
	if cfg.TLS.Enabled && cfg.TLS.InsecureSkipVerify {
		log.Warn("sink.clickhouse.tls.insecure_skip_verify is on: the server's certificate is not checked; use it for tests only")
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	sm, err := sinkmetrics.New(reg, SinkName)
	if err != nil {
		return nil, fmt.Errorf("clickhouse sink metrics: %w", err)
	}
	return &Sink{
		cfg:     cfg,
		names:   names{Database: cfg.Database, Prefix: cfg.TablePrefix},
		log:     log,
		m:       m,
		sm:      sm,
		opts:    cfg.options(pw, tlsCfg),
		stopped: make(chan struct{}),
	}, nil
}

// options are the driver's options for cfg.
func (c Config) options(pw secret.Secret, tlsCfg *tls.Config) *ch.Options {
	proto := ch.Native
	if c.Protocol == ProtocolHTTP {
		proto = ch.HTTP
	}
	method := ch.CompressionLZ4
	switch c.Compression {
	case CompressionZSTD:
		method = ch.CompressionZSTD
	case CompressionNone:
		method = ch.CompressionNone
	}
	return &ch.Options{
		Protocol: proto,
		Addr:     c.addrs(),
		// No database here: it may not exist yet, and every statement
		// names it.
		Auth:             ch.Auth{Username: c.Username, Password: pw.Reveal()},
		TLS:              tlsCfg,
		Compression:      &ch.Compression{Method: method},
		DialTimeout:      c.DialTimeout,
		ReadTimeout:      c.QueryTimeout,
		MaxOpenConns:     c.MaxOpenConns,
		MaxIdleConns:     min(c.MaxOpenConns, 5),
		ConnMaxLifetime:  time.Hour,
		ConnOpenStrategy: ch.ConnOpenInOrder,
		ClientInfo: ch.ClientInfo{Products: []struct{ Name, Version string }{
			{Name: "svcexport-collector"},
		}},
	}
}

// build makes the tls.Config, reading the files; nil when TLS is off.
func (t TLSConfig) build() (*tls.Config, error) {
	if !t.Enabled {
		return nil, nil
	}
	c := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         t.ServerName,
		InsecureSkipVerify: t.InsecureSkipVerify, //nolint:gosec // opt-in, warned about in New
	}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("sink.clickhouse.tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("sink.clickhouse.tls.ca_file: no PEM certificate in %s", t.CAFile)
		}
		c.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("sink.clickhouse.tls.cert_file/key_file: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// Start connects, checks the server version, creates the database, the
// tables and the edge alerts view when missing, adds the columns an older
// schema lacks, and starts one insert loop per table. A column of an
// incompatible type is an error naming table, column and both types. ctx
// bounds Start only; each server call also has query_timeout.
func (s *Sink) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateNew {
		return errors.New("clickhouse sink: Start called twice or after Shutdown")
	}
	conn, err := ch.Open(s.opts)
	if err != nil {
		return fmt.Errorf("open clickhouse %v: %w", s.opts.Addr, err)
	}
	version, err := s.checkServer(ctx, conn)
	if err != nil {
		_ = conn.Close()
		return err
	}
	found, err := s.ensureSchema(ctx, conn)
	if err != nil {
		_ = conn.Close()
		return err
	}
	base, cancel := context.WithCancel(context.Background())
	s.conn, s.cancel, s.version = conn, cancel, version
	s.writers = make(map[string]*tableWriter)
	for _, spec := range tableSpecs() {
		w := newTableWriter(s, spec)
		for _, c := range w.cols {
			w.httpCols = append(w.httpCols, ch.ColumnNameAndType{Name: c.Name, Type: found[spec.Source][c.Name]})
		}
		s.writers[spec.Source] = w
		go w.run(base)
	}
	s.state = stateStarted
	s.log.Info("clickhouse sink started",
		slog.String("server_version", version), slog.String("protocol", s.cfg.Protocol),
		slog.Any("addr", s.opts.Addr), slog.String("database", s.cfg.Database),
		slog.Int("batch_rows", s.cfg.BatchRows), slog.Duration("flush_interval", s.cfg.FlushInterval))
	return nil
}

// ServerVersion returns the version Start found ("" before Start).
func (s *Sink) ServerVersion() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.version
}

// callCtx bounds one server call by query_timeout.
func (s *Sink) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.cfg.QueryTimeout)
}

// checkServer pings and refuses servers older than MinServerVersion.
func (s *Sink) checkServer(ctx context.Context, conn driver.Conn) (string, error) {
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	if err := conn.Ping(cctx); err != nil {
		return "", fmt.Errorf("ping clickhouse %v over %s: %w", s.opts.Addr, s.cfg.Protocol, err)
	}
	var version string
	if err := conn.QueryRow(cctx, "SELECT version()").Scan(&version); err != nil {
		return "", fmt.Errorf("read clickhouse server version: %w", err)
	}
	if !versionAtLeast(version, MinServerVersion) {
		return "", fmt.Errorf("clickhouse server %v runs version %s, older than the oldest supported %s (insert deduplication tokens on non-replicated tables, async insert deduplication)",
			s.opts.Addr, version, MinServerVersion)
	}
	return version, nil
}

// versionAtLeast compares the leading numeric parts of two dotted versions.
func versionAtLeast(have, want string) bool {
	h, w := strings.Split(have, "."), strings.Split(want, ".")
	for i := range w {
		wn, _ := strconv.Atoi(w[i])
		hn := 0
		if i < len(h) {
			var err error
			if hn, err = strconv.Atoi(h[i]); err != nil {
				return false
			}
		}
		if hn != wn {
			return hn > wn
		}
	}
	return true
}

// columnTypes maps each column of table to its type; empty when the table
// does not exist.
func (s *Sink) columnTypes(ctx context.Context, conn driver.Conn, table string) (map[string]string, error) {
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	rows, err := conn.Query(cctx, "SELECT name, type FROM system.columns WHERE database = ? AND table = ?", s.cfg.Database, table)
	if err != nil {
		return nil, fmt.Errorf("read columns of %s.%s: %w", s.cfg.Database, table, err)
	}
	defer rows.Close()
	out := make(map[string]string)
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			return nil, fmt.Errorf("read columns of %s.%s: %w", s.cfg.Database, table, err)
		}
		out[name] = typ
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read columns of %s.%s: %w", s.cfg.Database, table, err)
	}
	return out, nil
}

func (s *Sink) exec(ctx context.Context, conn driver.Conn, what, query string) error {
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	if err := conn.Exec(cctx, query); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// ensureSchema creates or completes the database, the tables and the view.
// It returns the column types found in each table, by source.
func (s *Sink) ensureSchema(ctx context.Context, conn driver.Conn) (map[string]map[string]string, error) {
	if err := s.exec(ctx, conn, "create database "+s.cfg.Database, createDatabaseSQL(s.names)); err != nil {
		return nil, err
	}
	found := make(map[string]map[string]string)
	var errs []error
	for _, spec := range tableSpecs() {
		cols, err := s.ensureTable(ctx, conn, spec)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		found[spec.Source] = cols
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("clickhouse schema of database %s: %w", s.cfg.Database, errors.Join(errs...))
	}
	view := s.names.table("edge_alerts" + ViewSuffix)
	if err := s.exec(ctx, conn, "create view "+view, latestAlertsViewSQL(s.names)); err != nil {
		return nil, err
	}
	return found, nil
}

// ensureTable creates spec's table when missing, adds missing columns, and
// checks the types of the others and the engine.
func (s *Sink) ensureTable(ctx context.Context, conn driver.Conn, spec tableSpec) (map[string]string, error) {
	table := s.names.table(spec.Source)
	if err := s.exec(ctx, conn, "create table "+table, createTableSQL(s.names, spec)); err != nil {
		return nil, err
	}
	cols, err := s.columnTypes(ctx, conn, table)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, c := range spec.columns() {
		got, ok := cols[c.Name]
		switch {
		case !ok:
			if err := s.exec(ctx, conn, "add column "+c.Name+" to "+table, addColumnSQL(s.names, spec.Source, c)); err != nil {
				return nil, err
			}
			s.log.Info("clickhouse column added", slog.String("table", table), slog.String("column", c.Name), slog.String("type", c.Type))
			cols[c.Name] = c.Type
		case !compatibleType(got, c.Type):
			errs = append(errs, fmt.Errorf("table %s.%s column %s: found type %s, expected %s (drop or rename the column, or set sink.clickhouse.table_prefix to write new tables)",
				s.cfg.Database, table, c.Name, got, c.Type))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := s.checkEngine(ctx, conn, spec.Source); err != nil {
		return nil, err
	}
	return cols, nil
}

// checkEngine warns about a table that cannot remove duplicates and turns
// on insert deduplication where a plain table lacks it.
func (s *Sink) checkEngine(ctx context.Context, conn driver.Conn, source string) error {
	table := s.names.table(source)
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	var engine, create string
	err := conn.QueryRow(cctx, "SELECT engine, create_table_query FROM system.tables WHERE database = ? AND name = ?",
		s.cfg.Database, table).Scan(&engine, &create)
	if err != nil {
		return fmt.Errorf("read engine of %s.%s: %w", s.cfg.Database, table, err)
	}
	if !strings.Contains(engine, "ReplacingMergeTree") {
		s.log.Warn("clickhouse table is not a ReplacingMergeTree: records delivered twice stay twice",
			slog.String("table", table), slog.String("engine", engine))
	}
	plain := strings.HasSuffix(engine, "MergeTree") && !strings.HasPrefix(engine, "Replicated") && !strings.HasPrefix(engine, "Shared")
	if plain && !strings.Contains(create, "non_replicated_deduplication_window") {
		if err := s.exec(ctx, conn, "turn on insert deduplication of "+table, dedupWindowSQL(s.names, source)); err != nil {
			return err
		}
		s.log.Info("clickhouse insert deduplication turned on", slog.String("table", table), slog.Int("window", DedupWindow))
	}
	return nil
}

// Write delivers b into the table of b.Source and returns nil once the
// insert holding its rows was confirmed by the server. Its rows wait at most
// flush_interval for the rows of other Writes to the same table. On an
// error (or when ctx ends first) nothing of b may be taken as delivered;
// rows of b may still be stored, and a repeat is harmless (ids,
// ReplacingMergeTree). An empty batch is delivered at once.
func (s *Sink) Write(ctx context.Context, b *record.Batch) error {
	start := time.Now()
	kind, err := s.write(ctx, b)
	s.sm.WriteDuration.Observe(time.Since(start).Seconds())
	if err != nil {
		s.sm.Error(kind)
		return err
	}
	return nil
}

// Error kinds of collector_sink_errors_total{sink="clickhouse"}.
const (
	errKindInsert   = "insert"   // the insert failed
	errKindTimeout  = "timeout"  // the Write's context ended first
	errKindShutdown = "shutdown" // not started or shut down
	errKindSource   = "source"   // no table for the batch's source
)

func (s *Sink) write(ctx context.Context, b *record.Batch) (string, error) {
	if len(b.Envelopes) == 0 {
		return "", nil
	}
	s.mu.RLock()
	state, w := s.state, s.writers[b.Source]
	s.mu.RUnlock()
	if state != stateStarted {
		return errKindShutdown, fmt.Errorf("write %d %s records: %w", len(b.Envelopes), b.Source, errShutdown)
	}
	if w == nil {
		return errKindSource, fmt.Errorf("write %d records: no ClickHouse table for source %q", len(b.Envelopes), b.Source)
	}
	c := w.layout.newChunk(b)
	if err := w.enqueue(c); err != nil {
		return errKindShutdown, fmt.Errorf("write %d %s records: %w", c.rows, b.Source, err)
	}
	select {
	case err := <-c.done:
		if err != nil {
			return errKindInsert, fmt.Errorf("write %d %s records of %s page %d: %w", c.rows, b.Source, b.Account, b.Page, err)
		}
		s.sm.Records.Add(float64(c.rows))
		s.sm.Bytes.Add(float64(c.bytes))
		return "", nil
	case <-ctx.Done():
		what := "withdrawn before its insert"
		if !w.withdraw(c) {
			what = "its insert is in flight and may still store them"
		}
		return errKindTimeout, fmt.Errorf("write %d %s records (%s): %w", c.rows, b.Source, what, ctx.Err())
	}
}

// Ready pings the server: nil when the sink is started and the server
// answers within ctx and query_timeout.
func (s *Sink) Ready(ctx context.Context) error {
	s.mu.RLock()
	state, conn := s.state, s.conn
	s.mu.RUnlock()
	if state != stateStarted {
		return errors.New("clickhouse sink is not started")
	}
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	if err := conn.Ping(cctx); err != nil {
		return fmt.Errorf("ping clickhouse %v: %w", s.opts.Addr, err)
	}
	return nil
}

// Check is for "collector check": it connects with the configuration,
// pings, checks the server version, and checks the types of the columns of
// the tables that exist, changing nothing (missing tables and columns are
// what Start creates). It works before, during and without Start.
func (s *Sink) Check(ctx context.Context) error {
	conn, err := ch.Open(s.opts)
	if err != nil {
		return fmt.Errorf("open clickhouse %v: %w", s.opts.Addr, err)
	}
	defer conn.Close()
	if _, err := s.checkServer(ctx, conn); err != nil {
		return err
	}
	var errs []error
	for _, spec := range tableSpecs() {
		table := s.names.table(spec.Source)
		cols, err := s.columnTypes(ctx, conn, table)
		if err != nil {
			return err
		}
		for _, c := range spec.columns() {
			if got, ok := cols[c.Name]; ok && !compatibleType(got, c.Type) {
				errs = append(errs, fmt.Errorf("table %s.%s column %s: found type %s, expected %s", s.cfg.Database, table, c.Name, got, c.Type))
			}
		}
	}
	return errors.Join(errs...)
}

// Shutdown stops taking Writes, sends every pending row at once, waits for
// the inserts, and closes the connections. When ctx ends first, inserts in
// flight are cancelled and the Writes still waiting get an error (their
// batches come again after a restart); Shutdown then returns ctx's error.
// It is safe to call twice and without Start.
func (s *Sink) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	switch s.state {
	case stateNew:
		s.state = stateStopped
		s.mu.Unlock()
		s.stopOnce.Do(func() { close(s.stopped) })
		return nil
	case stateStopping, stateStopped:
		s.mu.Unlock()
		select {
		case <-s.stopped:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("shutdown clickhouse sink: %w", ctx.Err())
		}
	}
	s.state = stateStopping
	writers := s.writers
	s.mu.Unlock()

	for _, w := range writers {
		w.close()
	}
	var err error
wait:
	for _, w := range writers {
		select {
		case <-w.done:
		case <-ctx.Done():
			err = fmt.Errorf("shutdown clickhouse sink: pending rows not flushed: %w", ctx.Err())
			break wait
		}
	}
	s.cancel()
	for _, w := range writers {
		<-w.done
	}
	cerr := s.conn.Close()
	s.mu.Lock()
	s.state = stateStopped
	s.mu.Unlock()
	s.stopOnce.Do(func() { close(s.stopped) })
	if err == nil && cerr != nil {
		err = fmt.Errorf("close clickhouse connections: %w", cerr)
	}
	s.log.Info("clickhouse sink stopped")
	return err
}
