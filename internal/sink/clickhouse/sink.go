package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/column"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/clickhouse/schema"
	"github.com/svcexport/collector/internal/sink/sinkhelper"
)

// MinServerVersion is the oldest ClickHouse release Start accepts (see the
// package documentation).
const MinServerVersion = "24.8"

// SinkName is the value of the "sink" label of the shared sink metrics.
const SinkName = "clickhouse"

// Error kinds of collector_sink_errors_total{sink="clickhouse"}, besides
// sinkhelper's state and canceled.
const (
	errKindInsert  = "insert"  // the insert failed
	errKindTimeout = "timeout" // the Write's context ended while it waited
	errKindSource  = "source"  // no table for the batch's source (permanent)
)

var _ sink.Sink = (*Sink)(nil)

// Sink writes batches into one ClickHouse table per source. Build it with
// New; the zero value is not usable. Its Start, Write, Ready and Shutdown
// are sinkhelper.Base's, which runs the sink's own steps: start, push,
// ping, drain and close. Its methods are safe for concurrent use.
type Sink struct {
	*sinkhelper.Base

	cfg   Config
	names schema.Options
	log   *slog.Logger
	m     *metrics
	opts  *ch.Options

	// Set by start; pushes, which sinkhelper runs only after it, read them.
	scrub *secret.Scrubber // errors that may hold the server's words pass it

	conn    driver.Conn
	writers map[string]*tableWriter
	cancel  context.CancelFunc // ends inserts in flight (forced shutdown)
	version atomic.Pointer[string]
	// led is the ledger of delivery exactly_once (ledger.go).
	led chLedger
	// blockBytes bounds the blocks an insert is sent in (blocks);
	// insertBlockBytes but in tests.
	blockBytes int
}

// Option is an optional dependency of New.
type Option func(*options)

type options struct {
	scrub *secret.Scrubber
}

// WithScrubber gives the sink the process's secret scrubber
// (secret.Scrubber): its errors and log lines, which may hold the
// server's (or a proxy's) words, pass it, and it learns the password.
// Default: a scrubber of the sink's own password.
func WithScrubber(s *secret.Scrubber) Option { return func(o *options) { o.scrub = s } }

// New checks cfg, reads the password file and the TLS files, and registers
// the metrics with reg (nil: metrics nobody exports). It does not connect:
// Start does. log may be nil (no logs).
func New(cfg Config, reg prometheus.Registerer, log *slog.Logger, opts ...Option) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.scrub == nil {
		o.scrub = secret.NewScrubber()
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With(slog.String("sink", SinkName))
	pw, err := secret.Resolve(cfg.Password.Reveal(), cfg.PasswordFile)
	if err != nil {
		return nil, fmt.Errorf("sink.clickhouse.password_file: %w", err)
	}
	// The HTTP protocol sends the password in a header (X-ClickHouse-Key),
	// which a proxy may echo, or as Basic credentials.
	o.scrub.AddBasic(cfg.Username, pw)
	tlsCfg, err := cfg.TLS.Build()
	if err != nil {
		return nil, fmt.Errorf("sink.clickhouse.tls.%w", err)
	}
	if cfg.TLS.Enabled && cfg.TLS.InsecureSkipVerify {
		log.Warn("sink.clickhouse.tls.insecure_skip_verify is on: the server's certificate is not checked; use it for tests only")
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	s := &Sink{
		led:   chLedger{cov: sinkhelper.NewCoverage()},
		cfg:   cfg,
		names: cfg.schemaOptions(),
		log:   log,
		m:     m,
		opts:  cfg.options(pw, tlsCfg),
		scrub: o.scrub,

		blockBytes: insertBlockBytes,
	}
	s.Base, err = sinkhelper.New(SinkName, reg, s.push, sinkhelper.WithLogger(log),
		sinkhelper.WithStart(s.start), sinkhelper.WithReady(s.ping),
		sinkhelper.WithErrorKinds(errKindInsert, errKindTimeout, errKindSource),
		sinkhelper.WithDrain(s.drain), sinkhelper.WithClose(s.close), sinkhelper.WithErrorScrub(o.scrub.Error))
	if err != nil {
		return nil, err
	}
	return s, nil
}

// ServerVersion returns the version Start found ("" before Start).
func (s *Sink) ServerVersion() string {
	if v := s.version.Load(); v != nil {
		return *v
	}
	return ""
}

// start is Start's own step: it connects, checks the server version,
// creates the database, the tables and the edge alerts view when missing,
// brings tables of an older schema up to date where that can be done in
// place and warns about what cannot (schema.Ensure), and starts one insert
// loop per table. A column of an incompatible type is an error naming
// table, column and both types. ctx bounds Start only; each server call
// also has query_timeout.
func (s *Sink) start(ctx context.Context) error {
	conn, err := ch.Open(s.opts)
	if err != nil {
		return fmt.Errorf("open clickhouse %v: %w", s.opts.Addr, err)
	}
	version, err := s.checkServer(ctx, conn)
	if err != nil {
		_ = conn.Close()
		return err
	}
	found, err := schema.Ensure(ctx, conn, s.names, s.cfg.QueryTimeout, s.log)
	if err != nil {
		_ = conn.Close()
		return err
	}
	s.conn = conn
	if err := s.prepareLedger(ctx); err != nil {
		_ = conn.Close()
		return err
	}
	base, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.version.Store(&version)
	s.writers = make(map[string]*tableWriter)
	for _, t := range schema.Tables() {
		w := newTableWriter(s, t)
		for _, c := range w.cols {
			typ := found[t.Source][c.Name]
			if typ == "" {
				typ = c.Type // the ledger's column, added after Ensure looked
			}
			w.httpCols = append(w.httpCols, ch.ColumnNameAndType{Name: c.Name, Type: typ})
		}
		s.writers[t.Source] = w
		go w.run(base)
	}
	s.log.Info("clickhouse sink started",
		slog.String("server_version", version), slog.String("protocol", s.cfg.Protocol),
		slog.Any("addr", s.opts.Addr), slog.String("database", s.cfg.Database),
		slog.Int("batch_rows", s.cfg.BatchRows), slog.Duration("flush_interval", s.cfg.FlushInterval))
	return nil
}

// checkServer pings and refuses servers older than MinServerVersion.
func (s *Sink) checkServer(ctx context.Context, conn driver.Conn) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
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

// push is the sink's sinkhelper.PushFunc, the body of Write: it hands b's
// rows to its table's insert loop and returns nil once the insert holding
// them was confirmed by the server. The rows wait at most flush_interval
// for the rows of other Writes to the same table. On an error (or when ctx
// ends first) nothing of b may be taken as written; rows of b may still be
// stored, and a repeat is harmless (ids, ReplacingMergeTree). An error is
// permanent (sink.Permanent) when the server refuses b's rows for good (see
// the package documentation).
func (s *Sink) push(ctx context.Context, b *record.Batch) (sinkhelper.Written, error) {
	w := s.writers[b.Source]
	if w == nil {
		return sinkhelper.Written{}, sink.Permanent(sinkhelper.Kind(errKindSource,
			fmt.Errorf("write %d records: no ClickHouse table for source %q", len(b.Envelopes), b.Source)))
	}
	c := w.layout.newChunk(b)
	c.batch = s.handedOver(b)
	if err := w.enqueue(c); err != nil {
		return sinkhelper.Written{}, sinkhelper.Kind(sinkhelper.KindState, fmt.Errorf("write %d %s records: %w", c.rows, b.Source, err))
	}
	select {
	case err := <-c.done:
		if err != nil {
			err = sinkhelper.Kind(errKindInsert, fmt.Errorf("write %d %s records of %s page %d: %w", c.rows, b.Source, b.Account, b.Page, err))
			if forGood, _ := refusal(err); forGood {
				err = sink.Permanent(err)
			}
			return sinkhelper.Written{}, err
		}
		return sinkhelper.Written{Records: c.rows, Bytes: int64(c.bytes)}, nil
	case <-ctx.Done():
		what := "withdrawn before its insert"
		if !w.withdraw(c) {
			what = "its insert is in flight and may still store them"
		}
		return sinkhelper.Written{}, sinkhelper.Kind(errKindTimeout, fmt.Errorf("write %d %s records (%s): %w", c.rows, b.Source, what, ctx.Err()))
	}
}

// ping is Ready's probe: nil when the server answers within ctx and
// query_timeout.
func (s *Sink) ping(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	if err := s.conn.Ping(cctx); err != nil {
		return fmt.Errorf("ping clickhouse %v: %w", s.opts.Addr, err)
	}
	return nil
}

// Check is for "collector check": it connects with the configuration,
// pings, checks the server version and the cluster, and checks the types
// of the columns of the tables that exist, changing nothing. What Start
// would change is logged at info level, what it cannot (a table's older
// sorting key, with the statements that migrate it) as a warning
// (schema.Check). It works before, during and without Start.
func (s *Sink) Check(ctx context.Context) error {
	return s.scrub.Error(s.check(ctx))
}

// check is Check's body, whose errors Check scrubs.
func (s *Sink) check(ctx context.Context) error {
	conn, err := ch.Open(s.opts)
	if err != nil {
		return fmt.Errorf("open clickhouse %v: %w", s.opts.Addr, err)
	}
	defer conn.Close()
	if _, err := s.checkServer(ctx, conn); err != nil {
		return err
	}
	return schema.Check(ctx, conn, s.names, s.cfg.QueryTimeout, s.log)
}

// drain is Shutdown's first step: every insert loop sends its pending rows
// at once and returns. When ctx ends first, the inserts in flight are
// cancelled, which fails the Writes still waiting (their batches come
// again after a restart), and Shutdown returns ctx's error.
func (s *Sink) drain(ctx context.Context) error {
	for _, w := range s.writers {
		w.close()
	}
	var err error
	for _, w := range s.writers {
		select {
		case <-w.done:
			continue
		case <-ctx.Done():
			err = fmt.Errorf("shutdown clickhouse sink: pending rows not flushed: %w", ctx.Err())
		}
		break
	}
	s.cancel()
	for _, w := range s.writers {
		<-w.done
	}
	return err
}

// close is Shutdown's last step: it closes the connections.
func (s *Sink) close() error {
	err := s.conn.Close()
	s.log.Info("clickhouse sink stopped")
	if err != nil {
		return fmt.Errorf("close clickhouse connections: %w", err)
	}
	return nil
}

// refusal classifies an insert error. forGood: the server refuses this
// statement or these rows and will refuse every repeat until an operator
// changes the table or the grants (an unknown table or column, a value
// the column cannot take, a violated constraint, a missing grant).
// login: it refuses the credentials, which may pass (a password being
// rotated, users still loading): the pipeline retries, but the insert loop
// does not repeat at once. Neither: time-outs, lost connections, overload.
func refusal(err error) (forGood, login bool) {
	var ex *ch.Exception
	if !errors.As(err, &ex) {
		// The driver cannot convert the sink's values to the column the
		// server reports: the column's type changed after Start.
		var conv *column.ColumnConverterError
		return errors.As(err, &conv), false
	}
	switch ex.Code {
	case 6, // CANNOT_PARSE_TEXT
		16,  // NO_SUCH_COLUMN_IN_TABLE
		27,  // CANNOT_PARSE_INPUT_ASSERTION_FAILED
		36,  // BAD_ARGUMENTS
		47,  // UNKNOWN_IDENTIFIER
		53,  // TYPE_MISMATCH
		60,  // UNKNOWN_TABLE
		62,  // SYNTAX_ERROR
		70,  // CANNOT_CONVERT_TYPE
		81,  // UNKNOWN_DATABASE
		115, // UNKNOWN_SETTING
		117, // INCORRECT_DATA
		469, // VIOLATED_CONSTRAINT
		497: // ACCESS_DENIED
		return true, false
	case 192, // UNKNOWN_USER
		193, // WRONG_PASSWORD
		516: // AUTHENTICATION_FAILED
		return false, true
	}
	return false, false
}
