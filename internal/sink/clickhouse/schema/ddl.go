package schema

import (
	"fmt"
	"strings"
)

// The statements Ensure runs, built from the tables of schema.go and the
// Options. They are pinned by the golden files in testdata/ddl (single
// server) and testdata/ddl_cluster (a cluster named "logs"), and each of
// them is parsed by the test server (TestEveryStatementParsesOnTheServer).

// bloomFPR is the false positive rate of every bloom_filter index: about
// 10 bits a row, a granule of a value absent from it read once in a
// hundred.
const bloomFPR = "0.01"

// IndexName is the name of the bloom_filter index of column col.
func IndexName(col string) string { return "bf_" + col }

func (c Column) ddl() string {
	s := quoteIdent(c.Name) + " " + c.Type
	if c.Expr != "" {
		s += " MATERIALIZED " + c.Expr
	}
	if c.Codec != "" {
		s += " CODEC(" + c.Codec + ")"
	}
	return s
}

func indexDDL(col string) string {
	return "INDEX " + quoteIdent(IndexName(col)) + " " + quoteIdent(col) + " TYPE bloom_filter(" + bloomFPR + ") GRANULARITY 1"
}

// createDatabaseSQL creates the database when it is missing.
func createDatabaseSQL(o Options) string {
	return "CREATE DATABASE IF NOT EXISTS " + quoteIdent(o.Database) + o.onCluster()
}

// engineSQL is the engine of the tables holding rows. ReplacingMergeTree
// with fetched_at as version keeps one row per sorting key, the one fetched
// last, when parts merge (or at query time with FINAL). On a cluster the
// replicated variant keeps the replicas of a shard alike, in Keeper at
// ReplicaPath.
func engineSQL(o Options) string {
	if o.Cluster == "" {
		return "ReplacingMergeTree(fetched_at)"
	}
	return "ReplicatedReplacingMergeTree(" + quoteString(ReplicaPath) + ", '{replica}', fetched_at)"
}

// ttlExpr is the TTL of o, as system.tables shows it in engine_full.
func ttlExpr(o Options) string {
	return fmt.Sprintf("toDateTime(time) + toIntervalDay(%d)", o.ttlDays())
}

// tableSettings are the SETTINGS of a new table of o.
func tableSettings(o Options) []string {
	var s []string
	if o.Cluster == "" {
		s = append(s, fmt.Sprintf("non_replicated_deduplication_window = %d", DedupWindow))
	}
	if o.TTL > 0 {
		// Parts are months of record time: a part goes once all its
		// rows expired, without rewriting anything.
		s = append(s, "ttl_only_drop_parts = 1")
	}
	return s
}

// createTableSQL is the DDL of t's table holding the rows (the local table
// on a cluster). Partitions are months of record time, so old months can
// be dropped or moved whole; the sorting key is Table.SortingKey.
func createTableSQL(o Options, t Table) string {
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS " + o.qualifiedLocal(t.Source) + o.onCluster() + "\n(\n")
	var lines []string
	for _, c := range t.AllColumns() {
		lines = append(lines, c.ddl())
	}
	for _, col := range t.Bloom {
		lines = append(lines, indexDDL(col))
	}
	b.WriteString("    " + strings.Join(lines, ",\n    ") + "\n)\n")
	b.WriteString("ENGINE = " + engineSQL(o) + "\n")
	b.WriteString("PARTITION BY toYYYYMM(time)\n")
	b.WriteString("ORDER BY (" + strings.Join(t.SortingKey(), ", ") + ")\n")
	b.WriteString("PRIMARY KEY (" + strings.Join(t.PrimaryKey(), ", ") + ")\n")
	if o.TTL > 0 {
		b.WriteString("TTL " + ttlExpr(o) + "\n")
	}
	if s := tableSettings(o); len(s) > 0 {
		b.WriteString("SETTINGS " + strings.Join(s, ", ") + "\n")
	}
	return b.String()
}

// createDistributedSQL is the Distributed table of t on a cluster: the
// table inserts and queries use. Rows go to the shard of their id, so that
// every copy of a record meets the others in one ReplacingMergeTree, and a
// repeated insert sends the same rows to the same shards.
func createDistributedSQL(o Options, t Table) string {
	return "CREATE TABLE IF NOT EXISTS " + o.Qualified(t.Source) + o.onCluster() + " AS " + o.qualifiedLocal(t.Source) + "\n" +
		"ENGINE = Distributed(" + quoteString(o.Cluster) + ", " + quoteString(o.Database) + ", " +
		quoteString(o.LocalTable(t.Source)) + ", cityHash64(id))\n"
}

// alterSQL is one ALTER TABLE of the qualified table q with the commands
// cmds.
func alterSQL(o Options, q string, cmds []string) string {
	return "ALTER TABLE " + q + o.onCluster() + " " + strings.Join(cmds, ", ")
}

// addColumnSQL adds a column that an older schema lacks to the qualified
// table q (codec: false for a Distributed table, which stores nothing).
func addColumnSQL(o Options, q string, c Column, codec bool) string {
	if !codec {
		c.Codec = ""
	}
	return alterSQL(o, q, []string{"ADD COLUMN IF NOT EXISTS " + c.ddl()})
}

// tenantMigrationSQL gives a MergeTree table (qualified q) made before the
// tenant column, whose sorting key is key (as system.tables shows it), the
// column and appends it to the key, in one ALTER: ClickHouse allows that
// (metadata only, no part rewritten) for a column added in the same ALTER
// without a default expression, since every row there is has the same
// value, the empty string, and the parts stay sorted. Two tenants' identical records then
// differ in their key, as in a new table, where the tenant comes first.
func tenantMigrationSQL(o Options, q, key string) string {
	c := commonColumns()[ColTenant]
	return alterSQL(o, q, []string{"ADD COLUMN IF NOT EXISTS " + c.ddl(), "MODIFY ORDER BY (" + key + ", " + quoteIdent(c.Name) + ")"})
}

// convertColumnSQL gives column c of the qualified table q its type (and
// codec; codec: false for a Distributed table): a mutation rewriting the
// column in every part, which the ALTER waits for on a MergeTree table
// (about a million rows a second on 2 cores), and metadata only on a
// Distributed table. See convertibleType for why it cannot fail on a value.
func convertColumnSQL(o Options, q string, c Column, codec bool) string {
	if !codec {
		c.Codec = ""
	}
	return alterSQL(o, q, []string{"MODIFY COLUMN " + c.ddl()})
}

// modifyCodecsSQL gives the columns cols of source's table their codecs
// (metadata only: new parts and merges write them).
func modifyCodecsSQL(o Options, source string, cols []Column) string {
	var cmds []string
	for _, c := range cols {
		cmds = append(cmds, "MODIFY COLUMN "+quoteIdent(c.Name)+" CODEC("+c.Codec+")")
	}
	return alterSQL(o, o.qualifiedLocal(source), cmds)
}

// addIndexesSQL adds the bloom_filter indexes of cols, then
// materializeIndexesSQL builds them for the parts written before (a
// mutation that runs in the background).
func addIndexesSQL(o Options, source string, cols []string) string {
	var cmds []string
	for _, col := range cols {
		cmds = append(cmds, "ADD "+strings.Replace(indexDDL(col), "INDEX ", "INDEX IF NOT EXISTS ", 1))
	}
	return alterSQL(o, o.qualifiedLocal(source), cmds)
}

// materializeColumnSQL stores the derived column c (Column.Expr) in the
// parts of source's table written before it was added: a mutation in the
// background, after which reads of those rows no longer compute it from
// the record.
func materializeColumnSQL(o Options, source string, c Column) string {
	return alterSQL(o, o.qualifiedLocal(source), []string{"MATERIALIZE COLUMN " + quoteIdent(c.Name)})
}

func materializeIndexesSQL(o Options, source string, cols []string) string {
	var cmds []string
	for _, col := range cols {
		cmds = append(cmds, "MATERIALIZE INDEX "+quoteIdent(IndexName(col)))
	}
	return alterSQL(o, o.qualifiedLocal(source), cmds)
}

// ttlSQL sets the TTL of o on source's table: parts are dropped whole, then
// the TTL (the server computes it for the parts there are in the
// background).
func ttlSQL(o Options, source string) []string {
	q := o.qualifiedLocal(source)
	return []string{
		alterSQL(o, q, []string{"MODIFY SETTING ttl_only_drop_parts = 1"}),
		alterSQL(o, q, []string{"MODIFY TTL " + ttlExpr(o)}),
	}
}

// dedupWindowSQL turns on insert deduplication on a table of a single
// server created without it (by hand or by an older version).
func dedupWindowSQL(o Options, source string) string {
	return alterSQL(o, o.qualifiedLocal(source), []string{fmt.Sprintf("MODIFY SETTING non_replicated_deduplication_window = %d", DedupWindow)})
}

// migrationSQL are the statements that give source's table of a single
// server the sorting key of t when it has another: rename it away, let the
// collector create the table anew, copy the rows over (the columns both
// have: cols), drop the old table. It is what the warning of Ensure and
// Check says and docs/clickhouse.md explains.
func migrationSQL(o Options, t Table, cols map[string]string) []string {
	old := o.Qualified(t.Source + "_v1")
	var names []string
	for _, c := range t.Columns() {
		if _, ok := cols[c.Name]; ok {
			names = append(names, quoteIdent(c.Name))
		}
	}
	list := strings.Join(names, ", ")
	return []string{
		"RENAME TABLE " + o.Qualified(t.Source) + " TO " + old,
		"INSERT INTO " + o.Qualified(t.Source) + " (" + list + ") SELECT " + list + " FROM " + old,
		"DROP TABLE " + old,
	}
}

// A latest-state view: one row per entity of a source whose records are
// versions of it, holding the columns of its latest version.
type latestView struct {
	source  string
	key     string   // the entity's column, grouped by with the account
	version []string // compared as a tuple: the greatest is the latest
}

// latestViews are the views Ensure creates (or replaces) after the tables.
//
// edge_alerts_latest: the latest version of every edge alert (CONTRACT C6:
// an alert changes after creation, and each version is a record of its
// own, with its own id): the greatest update_time, ties broken by
// fetched_at, then by the id (so that every column comes from the same
// row).
//
// agent_info_latest: the current state of every agent (mid) of the fleet:
// agent_info records are snapshots, the record time (createdTime) says
// when each was taken, so the latest is the greatest time, then
// last_update (the agent's own report), fetched_at and the id.
//
// One row per tenant, account and entity: the same uuid or mid seen under
// two sub-accounts (or two tenants) stays two rows; records without the member are the row of
// "" or 0.
func latestViews() []latestView {
	return []latestView{
		{source: "edge_alerts", key: "uuid", version: []string{"update_time", "fetched_at", "id"}},
		{source: "agent_info", key: "mid", version: []string{"time", "last_update", "fetched_at", "id"}},
	}
}

// latestViewSQL is the DDL of v: a plain view, computed at query time with
// argMax, so that it is right from the first row (no materialized state to
// backfill or to go stale) and also over a cluster's Distributed table.
//
// One argMax per column, not one over a tuple of all: a query naming a few
// columns of the view reads only those (and the version columns) instead
// of every raw record (the first view of alerts read them all). The inner
// query renames the columns so that no alias of the outer one shadows a
// column it reads.
func latestViewSQL(o Options, v latestView) string {
	var spec Table
	for _, t := range Tables() {
		if t.Source == v.source {
			spec = t
		}
	}
	var cols []string
	for _, c := range spec.Columns() {
		if c.Name != "account" && c.Name != TenantColumn && c.Name != v.key {
			cols = append(cols, c.Name)
		}
	}
	var b strings.Builder
	b.WriteString("CREATE OR REPLACE VIEW " + o.Qualified(v.source+ViewSuffix) + o.onCluster() + " AS\n")
	b.WriteString("SELECT\n    tenant,\n    account,\n    " + v.key)
	for _, c := range cols {
		fmt.Fprintf(&b, ",\n    argMax(%s, v) AS %s", quoteIdent("v_"+c), quoteIdent(c))
	}
	b.WriteString("\nFROM\n(\n    SELECT\n        tenant,\n        account,\n        " + v.key + ",\n        (" + strings.Join(v.version, ", ") + ") AS v")
	for _, c := range cols {
		fmt.Fprintf(&b, ",\n        %s AS %s", quoteIdent(c), quoteIdent("v_"+c))
	}
	b.WriteString("\n    FROM " + o.Qualified(v.source) + "\n)\n")
	b.WriteString("GROUP BY tenant, account, " + v.key + "\n")
	return b.String()
}

// InsertSQL is the INSERT of t's rows, columns named in the order of
// t.Columns, into the table of Options.Table.
func InsertSQL(o Options, t Table) string {
	cols := t.Columns()
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = quoteIdent(c.Name)
	}
	return "INSERT INTO " + o.Qualified(t.Source) + " (" + strings.Join(q, ", ") + ")"
}
