package schema

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// ensurer runs the statements of Ensure and Check.
type ensurer struct {
	n       Names
	timeout time.Duration // of each statement
	log     *slog.Logger
}

// Ensure creates the database, the tables and the view when missing, adds
// the columns an older schema lacks, and turns on insert deduplication where
// a table lacks it. A column of an incompatible type is an error naming
// table, column and both types. It returns the column types found in each
// table, by source. Every statement is bounded by timeout; log (nil: none)
// receives the changes made.
func Ensure(ctx context.Context, conn driver.Conn, n Names, timeout time.Duration, log *slog.Logger) (map[string]map[string]string, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &ensurer{n: n, timeout: timeout, log: log}
	if err := e.exec(ctx, conn, "create database "+e.n.Database, createDatabaseSQL(e.n)); err != nil {
		return nil, err
	}
	found := make(map[string]map[string]string)
	var errs []error
	for _, spec := range Tables() {
		cols, err := e.ensureTable(ctx, conn, spec)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		found[spec.Source] = cols
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("clickhouse schema of database %s: %w", e.n.Database, errors.Join(errs...))
	}
	view := e.n.Table("edge_alerts" + ViewSuffix)
	if err := e.exec(ctx, conn, "create view "+view, latestAlertsViewSQL(e.n)); err != nil {
		return nil, err
	}
	return found, nil
}

// ensureTable creates spec's table when missing, adds missing columns, and
// checks the types of the others and the engine.
func (e *ensurer) ensureTable(ctx context.Context, conn driver.Conn, spec Table) (map[string]string, error) {
	table := e.n.Table(spec.Source)
	if err := e.exec(ctx, conn, "create table "+table, createTableSQL(e.n, spec)); err != nil {
		return nil, err
	}
	cols, err := e.columnTypes(ctx, conn, table)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, c := range spec.Columns() {
		got, ok := cols[c.Name]
		switch {
		case !ok:
			if err := e.exec(ctx, conn, "add column "+c.Name+" to "+table, addColumnSQL(e.n, spec.Source, c)); err != nil {
				return nil, err
			}
			e.log.Info("clickhouse column added", slog.String("table", table), slog.String("column", c.Name), slog.String("type", c.Type))
			cols[c.Name] = c.Type
		case !compatibleType(got, c.Type):
			errs = append(errs, fmt.Errorf("table %s.%s column %s: found type %s, expected %s (drop or rename the column, or set sink.clickhouse.table_prefix to write new tables)",
				e.n.Database, table, c.Name, got, c.Type))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := e.checkEngine(ctx, conn, spec.Source); err != nil {
		return nil, err
	}
	return cols, nil
}

// checkEngine warns about a table that cannot remove duplicates and turns
// on insert deduplication where a plain table lacks it.
func (e *ensurer) checkEngine(ctx context.Context, conn driver.Conn, source string) error {
	table := e.n.Table(source)
	cctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	var engine, create string
	err := conn.QueryRow(cctx, "SELECT engine, create_table_query FROM system.tables WHERE database = ? AND name = ?",
		e.n.Database, table).Scan(&engine, &create)
	if err != nil {
		return fmt.Errorf("read engine of %s.%s: %w", e.n.Database, table, err)
	}
	if !strings.Contains(engine, "ReplacingMergeTree") {
		e.log.Warn("clickhouse table is not a ReplacingMergeTree: records delivered twice stay twice",
			slog.String("table", table), slog.String("engine", engine))
	}
	plain := strings.HasSuffix(engine, "MergeTree") && !strings.HasPrefix(engine, "Replicated") && !strings.HasPrefix(engine, "Shared")
	if plain && !strings.Contains(create, "non_replicated_deduplication_window") {
		if err := e.exec(ctx, conn, "turn on insert deduplication of "+table, dedupWindowSQL(e.n, source)); err != nil {
			return err
		}
		e.log.Info("clickhouse insert deduplication turned on", slog.String("table", table), slog.Int("window", DedupWindow))
	}
	return nil
}

// Check checks the types of the columns of the tables that exist, changing
// nothing: missing tables and columns are what Ensure creates.
func Check(ctx context.Context, conn driver.Conn, n Names, timeout time.Duration) error {
	e := &ensurer{n: n, timeout: timeout}
	var errs []error
	for _, spec := range Tables() {
		table := e.n.Table(spec.Source)
		cols, err := e.columnTypes(ctx, conn, table)
		if err != nil {
			return err
		}
		for _, c := range spec.Columns() {
			if got, ok := cols[c.Name]; ok && !compatibleType(got, c.Type) {
				errs = append(errs, fmt.Errorf("table %s.%s column %s: found type %s, expected %s", e.n.Database, table, c.Name, got, c.Type))
			}
		}
	}
	return errors.Join(errs...)
}

// columnTypes maps each column of table to its type; empty when the table
// does not exist.
func (e *ensurer) columnTypes(ctx context.Context, conn driver.Conn, table string) (map[string]string, error) {
	cctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	rows, err := conn.Query(cctx, "SELECT name, type FROM system.columns WHERE database = ? AND table = ?", e.n.Database, table)
	if err != nil {
		return nil, fmt.Errorf("read columns of %s.%s: %w", e.n.Database, table, err)
	}
	defer rows.Close()
	out := make(map[string]string)
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			return nil, fmt.Errorf("read columns of %s.%s: %w", e.n.Database, table, err)
		}
		out[name] = typ
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read columns of %s.%s: %w", e.n.Database, table, err)
	}
	return out, nil
}

// exec runs one statement, saying what it was for on an error.
func (e *ensurer) exec(ctx context.Context, conn driver.Conn, what, query string) error {
	cctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	if err := conn.Exec(cctx, query); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
