package schema

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// ensurer runs the statements of Ensure, or, for Check, says which it
// would run.
type ensurer struct {
	o       Options
	conn    driver.Conn
	timeout time.Duration // of each statement
	log     *slog.Logger
	apply   bool // Ensure: run the changes; Check: only log them
}

func newEnsurer(conn driver.Conn, o Options, timeout time.Duration, log *slog.Logger, apply bool) *ensurer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &ensurer{o: o, conn: conn, timeout: timeout, log: log, apply: apply}
}

// Ensure creates the database, the tables and the view when missing, and
// brings tables of an older schema as close to the current one as can be
// done in place (evolve.go): missing columns, codecs, skip indexes, the
// TTL, insert deduplication. A column of an incompatible type is an error
// naming table, column and both types; a table whose sorting key differs
// is logged as a warning saying how to migrate it. It returns the column
// types of the table inserted into, by source. Every statement is bounded
// by timeout; log (nil: none) receives the changes made.
func Ensure(ctx context.Context, conn driver.Conn, o Options, timeout time.Duration, log *slog.Logger) (map[string]map[string]string, error) {
	return newEnsurer(conn, o, timeout, log, true).run(ctx)
}

// Check finds what Ensure would find, changing nothing: incompatible
// column types and a cluster the server does not know are errors; what
// Ensure would change is logged at info level, what it cannot change (a
// sorting key) as a warning with the way to migrate.
func Check(ctx context.Context, conn driver.Conn, o Options, timeout time.Duration, log *slog.Logger) error {
	_, err := newEnsurer(conn, o, timeout, log, false).run(ctx)
	return err
}

func (e *ensurer) run(ctx context.Context) (map[string]map[string]string, error) {
	if e.o.Cluster != "" {
		if err := e.checkCluster(ctx); err != nil {
			return nil, err
		}
	}
	if err := e.change(ctx, "create database "+e.o.Database, createDatabaseSQL(e.o)); err != nil {
		return nil, err
	}
	found := make(map[string]map[string]string)
	var errs []error
	for _, spec := range Tables() {
		cols, err := e.ensureTable(ctx, spec)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		found[spec.Source] = cols
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("clickhouse schema of database %s: %w", e.o.Database, errors.Join(errs...))
	}
	for _, v := range latestViews() {
		view := e.o.Table(v.source + ViewSuffix)
		if err := e.change(ctx, "create or replace view "+view, latestViewSQL(e.o, v)); err != nil {
			return nil, err
		}
	}
	return found, nil
}

// checkCluster makes sure the server knows the cluster and the macros the
// replicated tables need.
func (e *ensurer) checkCluster(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	var clusters, macros uint64
	err := e.conn.QueryRow(cctx, "SELECT (SELECT count() FROM system.clusters WHERE cluster = ?), (SELECT count() FROM system.macros WHERE macro IN ('shard', 'replica'))",
		e.o.Cluster).Scan(&clusters, &macros)
	if err != nil {
		return fmt.Errorf("read system.clusters: %w", err)
	}
	if clusters == 0 {
		return fmt.Errorf("sink.clickhouse.cluster: the server does not know cluster %q (system.clusters; remote_servers in its configuration)", e.o.Cluster)
	}
	if macros < 2 {
		return fmt.Errorf("sink.clickhouse.cluster: the server lacks the {shard} and {replica} macros the replicated tables of cluster %q need (system.macros)", e.o.Cluster)
	}
	return nil
}

// ensureTable creates spec's tables when missing, completes them, and
// returns the column types of the table inserted into.
func (e *ensurer) ensureTable(ctx context.Context, spec Table) (map[string]string, error) {
	local := e.o.LocalTable(spec.Source)
	st, err := e.state(ctx, local)
	if err != nil {
		return nil, err
	}
	if !st.exists {
		if err := e.change(ctx, "create table "+local, createTableSQL(e.o, spec)); err != nil {
			return nil, err
		}
		if !e.apply {
			return nil, nil
		}
		if st, err = e.state(ctx, local); err != nil {
			return nil, err
		}
		st.created = true
	}
	if err := e.checkEngine(local, st.engine); err != nil {
		return nil, err
	}
	if _, ok := st.cols[TenantColumn]; ok && !slices.Contains(strings.Split(squash(st.sortingKey), ","), TenantColumn) {
		// Made by hand, or altered: two tenants' identical records
		// would become one row (ReplacingMergeTree), so the sink does
		// not write into it.
		return nil, fmt.Errorf("table %s.%s has a %s column that its sorting key (%s) lacks: two tenants' identical records would become one row; migrate it (docs/clickhouse.md, \"Tenants\") or set sink.clickhouse.table_prefix to write new tables",
			e.o.Database, local, TenantColumn, st.sortingKey)
	}
	if err := e.completeColumns(ctx, local, e.o.qualifiedLocal(spec.Source), spec, &st, true); err != nil {
		return nil, err
	}
	if err := e.evolve(ctx, spec, st); err != nil {
		return nil, err
	}
	if e.o.Cluster == "" {
		return st.cols, nil
	}
	dist := e.o.Table(spec.Source)
	dt, err := e.state(ctx, dist)
	if err != nil {
		return nil, err
	}
	if !dt.exists {
		if err := e.change(ctx, "create distributed table "+dist, createDistributedSQL(e.o, spec)); err != nil {
			return nil, err
		}
		if !e.apply {
			return nil, nil
		}
		if dt, err = e.state(ctx, dist); err != nil {
			return nil, err
		}
	}
	if dt.engine != "Distributed" {
		return nil, fmt.Errorf("table %s.%s is a %s, but with sink.clickhouse.cluster it must be the Distributed table over %s (see docs/clickhouse.md, \"From one server to a cluster\")",
			e.o.Database, dist, dt.engine, local)
	}
	if err := e.completeColumns(ctx, dist, e.o.Qualified(spec.Source), spec, &dt, false); err != nil {
		return nil, err
	}
	return dt.cols, nil
}

// checkEngine refuses a table that cannot be the one configured and warns
// about one that cannot remove duplicates.
func (e *ensurer) checkEngine(table, engine string) error {
	replicated := strings.HasPrefix(engine, "Replicated") || strings.HasPrefix(engine, "Shared")
	switch {
	case engine == "Distributed" && e.o.Cluster == "":
		return fmt.Errorf("table %s.%s is a Distributed table: set sink.clickhouse.cluster to the cluster it spans", e.o.Database, table)
	case e.o.Cluster != "" && !replicated:
		return fmt.Errorf("table %s.%s is a %s, but with sink.clickhouse.cluster its rows must be in a replicated table (see docs/clickhouse.md, \"From one server to a cluster\")",
			e.o.Database, table, engine)
	case !strings.Contains(engine, "ReplacingMergeTree"):
		e.log.Warn("clickhouse table is not a ReplacingMergeTree: records written twice stay twice",
			slog.String("table", table), slog.String("engine", engine))
	}
	return nil
}

// completeColumns adds the columns of spec that table (qualified q) lacks,
// converts those of an older type it converts in place (convertibleType:
// the rows stay, their values converted) and checks the types of the
// others; st gets the added and converted ones (Ensure).
func (e *ensurer) completeColumns(ctx context.Context, table, q string, spec Table, st *tableState, codec bool) error {
	var errs []error
	for _, c := range spec.AllColumns() {
		got, ok := st.cols[c.Name]
		switch {
		case !ok && c.Name == TenantColumn && codec:
			// A table made before tenants: the column goes into its
			// sorting key too, or two tenants' identical records
			// would become one row.
			if err := e.change(ctx, "add column "+c.Name+" to "+table+" and to its sorting key", tenantMigrationSQL(e.o, q, st.sortingKey)); err != nil {
				return err
			}
			if e.apply {
				e.log.Info("clickhouse column added and appended to the sorting key (metadata only)", slog.String("table", table), slog.String("column", c.Name), slog.String("sorting_key", st.sortingKey+", "+c.Name))
				st.cols[c.Name], st.codecs[c.Name] = c.Type, c.Codec
				st.sortingKey += ", " + c.Name
			}
		case !ok:
			if err := e.change(ctx, "add column "+c.Name+" to "+table, addColumnSQL(e.o, q, c, codec)); err != nil {
				return err
			}
			if e.apply {
				e.log.Info("clickhouse column added", slog.String("table", table), slog.String("column", c.Name), slog.String("type", c.Type))
				st.cols[c.Name], st.codecs[c.Name] = c.Type, c.Codec
			}
			if c.Expr != "" && codec {
				// Rows stored before read the column computed from their
				// record; the mutation stores it in their parts.
				if err := e.change(ctx, "store column "+c.Name+" in the older parts of "+table, materializeColumnSQL(e.o, spec.Source, c)); err != nil {
					return err
				}
			}
		case convertibleType(got, c.Type):
			if err := e.change(ctx, "convert column "+c.Name+" of "+table+" from "+got+" to "+c.Type, convertColumnSQL(e.o, q, c, codec)); err != nil {
				return err
			}
			if e.apply {
				e.log.Info("clickhouse column converted in place (values that are none become NULL; the raw record keeps them)",
					slog.String("table", table), slog.String("column", c.Name), slog.String("was", got), slog.String("type", c.Type))
				st.cols[c.Name] = c.Type
				if codec {
					st.codecs[c.Name] = "CODEC(" + c.Codec + ")"
				}
			}
		case !compatibleType(got, c.Type):
			errs = append(errs, fmt.Errorf("table %s.%s column %s: found type %s, expected %s (drop or rename the column, or set sink.clickhouse.table_prefix to write new tables)",
				e.o.Database, table, c.Name, got, c.Type))
		}
	}
	return errors.Join(errs...)
}

// change runs one statement (Ensure) or logs that Start would (Check).
func (e *ensurer) change(ctx context.Context, what, query string) error {
	if !e.apply {
		if !strings.HasPrefix(query, "CREATE DATABASE") && !strings.HasPrefix(query, "CREATE OR REPLACE VIEW") {
			e.log.Info("clickhouse schema: the sink's start will "+what, slog.String("database", e.o.Database), slog.String("statement", query))
		}
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	if err := e.conn.Exec(cctx, query); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
