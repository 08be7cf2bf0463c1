package schema

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// What a table of an older schema gets in place, and what it cannot.
//
// In place (metadata, or a mutation the server runs in the background):
// missing columns (ADD COLUMN; older rows read the default), the codecs of
// columns that have none (MODIFY COLUMN ... CODEC: new parts and merges use
// them), the bloom_filter indexes (ADD INDEX, then MATERIALIZE INDEX for
// the parts there are), the configured TTL (MODIFY TTL, with
// ttl_only_drop_parts) and insert deduplication on a single server (MODIFY
// SETTING non_replicated_deduplication_window).
//
// Not in place: the sorting key. A table ordered otherwise keeps working
// (deduplication included, as long as its key ends with the id) but reads
// more than it needs; Ensure and Check log a warning with the statements
// that migrate it (migrationSQL). A codec somebody chose and LowCardinality
// or not are left as they are, with a warning naming the columns
// (warnColumns); a TTL set by hand while sink.clickhouse.ttl is off is left
// with a warning too.

// tableState is what the server says of one table.
type tableState struct {
	exists     bool
	created    bool // by this Ensure
	engine     string
	engineFull string
	sortingKey string
	cols       map[string]string // name: type
	codecs     map[string]string // name: compression_codec ("" for the default)
	indexes    map[string]bool
}

// state reads the engine, columns and skip indexes of table.
func (e *ensurer) state(ctx context.Context, table string) (tableState, error) {
	cctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	st := tableState{cols: map[string]string{}, codecs: map[string]string{}, indexes: map[string]bool{}}
	fail := func(err error) (tableState, error) {
		return tableState{}, fmt.Errorf("read the schema of %s.%s: %w", e.o.Database, table, err)
	}
	rows, err := e.conn.Query(cctx, "SELECT engine, engine_full, sorting_key FROM system.tables WHERE database = ? AND name = ?", e.o.Database, table)
	if err != nil {
		return fail(err)
	}
	for rows.Next() {
		st.exists = true
		if err := rows.Scan(&st.engine, &st.engineFull, &st.sortingKey); err != nil {
			rows.Close()
			return fail(err)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	if !st.exists {
		return st, nil
	}
	rows, err = e.conn.Query(cctx, "SELECT name, type, compression_codec FROM system.columns WHERE database = ? AND table = ?", e.o.Database, table)
	if err != nil {
		return fail(err)
	}
	for rows.Next() {
		var name, typ, codec string
		if err := rows.Scan(&name, &typ, &codec); err != nil {
			rows.Close()
			return fail(err)
		}
		st.cols[name], st.codecs[name] = typ, codec
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	rows, err = e.conn.Query(cctx, "SELECT name FROM system.data_skipping_indices WHERE database = ? AND table = ?", e.o.Database, table)
	if err != nil {
		return fail(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return fail(err)
		}
		st.indexes[name] = true
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	return st, nil
}

// evolve brings the table of spec (state st, columns complete) as close to
// the current schema as can be done in place, and warns about the rest.
func (e *ensurer) evolve(ctx context.Context, spec Table, st tableState) error {
	table := e.o.LocalTable(spec.Source)
	if st.created {
		return nil
	}
	var codecs []Column
	for _, c := range spec.AllColumns() {
		if c.Codec != "" && st.codecs[c.Name] == "" {
			codecs = append(codecs, c)
		}
	}
	if len(codecs) > 0 {
		if err := e.change(ctx, "set the codecs of "+table, modifyCodecsSQL(e.o, spec.Source, codecs)); err != nil {
			return err
		}
		e.done("clickhouse column codecs set (new parts and merges use them)", table, slog.Int("columns", len(codecs)))
	}
	var missing []string
	for _, col := range spec.Bloom {
		if !st.indexes[IndexName(col)] {
			missing = append(missing, col)
		}
	}
	if len(missing) > 0 {
		if err := e.change(ctx, "add the skip indexes of "+table, addIndexesSQL(e.o, spec.Source, missing)); err != nil {
			return err
		}
		if err := e.change(ctx, "build the skip indexes of "+table, materializeIndexesSQL(e.o, spec.Source, missing)); err != nil {
			return err
		}
		e.done("clickhouse skip indexes added (built for older parts in the background, see system.mutations)", table, slog.Any("columns", missing))
	}
	if err := e.evolveTTL(ctx, spec, table, st); err != nil {
		return err
	}
	plain := strings.HasSuffix(st.engine, "MergeTree") && !strings.HasPrefix(st.engine, "Replicated") && !strings.HasPrefix(st.engine, "Shared")
	if plain && !strings.Contains(st.engineFull, "non_replicated_deduplication_window") {
		if err := e.change(ctx, "turn on insert deduplication of "+table, dedupWindowSQL(e.o, spec.Source)); err != nil {
			return err
		}
		e.done("clickhouse insert deduplication turned on", table, slog.Int("window", DedupWindow))
	}
	want := strings.Join(spec.SortingKey(), ", ")
	if !sortingKeyCurrent(spec, st) {
		e.warnSortingKey(spec, table, st, want)
	}
	e.warnColumns(spec, table, st)
	return nil
}

// warnColumns says which columns of table keep a codec or a type other
// than the current schema's: a codec somebody chose (it is theirs to
// change) and LowCardinality or not (changing it rewrites the column, a
// mutation over every part, which the sink does not start on its own). The
// sink writes into them all the same.
func (e *ensurer) warnColumns(spec Table, table string, st tableState) {
	var kept []string
	for _, c := range spec.AllColumns() {
		got, ok := st.cols[c.Name]
		if !ok {
			continue
		}
		if c.Codec != "" && st.codecs[c.Name] != "" && squash(st.codecs[c.Name]) != squash("CODEC("+c.Codec+")") {
			kept = append(kept, c.Name+" keeps "+st.codecs[c.Name]+" (new tables: CODEC("+c.Codec+"); ALTER TABLE ... MODIFY COLUMN "+c.Name+" CODEC("+c.Codec+") changes it for new parts)")
		}
		if squash(got) != squash(c.Type) && compatibleType(got, c.Type) {
			kept = append(kept, c.Name+" keeps type "+got+" (new tables: "+c.Type+"; ALTER TABLE ... MODIFY COLUMN "+c.Name+" "+c.Type+" rewrites the column)")
		}
	}
	if len(kept) > 0 {
		e.log.Warn("clickhouse table keeps column codecs or types that differ from the current schema: left as they are, the sink writes into them (see docs/clickhouse.md)",
			slog.String("table", e.o.Database+"."+table), slog.Any("columns", kept))
	}
}

// sortingKeyCurrent reports whether st's sorting key is spec's, or the key
// of a table made before the tenant column with the tenant appended
// (tenantMigrationSQL; for Check, which changes nothing, also without it
// while the table lacks the column): both keep one row per record and
// tenant. A query of one tenant reads more of a migrated table than of a
// new one, which docs/clickhouse.md says, with how to migrate it whole.
func sortingKeyCurrent(spec Table, st tableState) bool {
	key := spec.SortingKey()
	found := squash(st.sortingKey)
	if found == squash(strings.Join(key, ",")) || found == squash(strings.Join(append(key[1:], TenantColumn), ",")) {
		return true
	}
	_, has := st.cols[TenantColumn]
	return !has && found == squash(strings.Join(key[1:], ","))
}

// squash removes the spaces of a type or codec, to compare them.
func squash(s string) string { return strings.ReplaceAll(s, " ", "") }

// evolveTTL sets the configured TTL, or warns about one set by hand.
func (e *ensurer) evolveTTL(ctx context.Context, spec Table, table string, st tableState) error {
	found := tableTTL(st.engineFull)
	switch {
	case e.o.TTL > 0 && found != ttlExpr(e.o):
		for _, q := range ttlSQL(e.o, spec.Source) {
			if err := e.change(ctx, "set the TTL of "+table, q); err != nil {
				return err
			}
		}
		e.done("clickhouse TTL set (parts past it are dropped in the background)", table, slog.String("ttl", ttlExpr(e.o)), slog.String("was", found))
	case e.o.TTL == 0 && found != "":
		e.log.Warn("clickhouse table has a TTL that sink.clickhouse.ttl does not ask for: left alone (ALTER TABLE ... REMOVE TTL removes it)",
			slog.String("table", table), slog.String("ttl", found))
	}
	return nil
}

// tableTTL is the table TTL in engine_full, or "".
func tableTTL(engineFull string) string {
	_, ttl, ok := strings.Cut(engineFull, " TTL ")
	if !ok {
		return ""
	}
	ttl, _, _ = strings.Cut(ttl, " SETTINGS ")
	return strings.TrimSpace(ttl)
}

// warnSortingKey says that table keeps its sorting key and how to migrate.
func (e *ensurer) warnSortingKey(spec Table, table string, st tableState, want string) {
	attrs := []any{slog.String("table", e.o.Database+"."+table), slog.String("sorting_key", st.sortingKey), slog.String("new_tables", want)}
	if e.o.Cluster == "" {
		m := migrationSQL(e.o, spec, st.cols)
		attrs = append(attrs, slog.String("migrate", "1) "+m[0]+"; 2) start the collector; 3) "+m[1]+"; 4) once the counts agree: "+m[2]))
	}
	e.log.Warn("clickhouse table keeps its older sorting key, which ClickHouse cannot change in place: it works, but a query by "+spec.Key+
		" reads more than it needs; to migrate, stop the collector, rename the table, start the collector (it creates the table anew), copy the rows, drop the old table (statements in \"migrate\"; see docs/clickhouse.md)",
		attrs...)
}

// done logs a change Ensure made.
func (e *ensurer) done(msg, table string, attrs ...any) {
	if e.apply {
		e.log.Info(msg, append([]any{slog.String("table", table)}, attrs...)...)
	}
}
