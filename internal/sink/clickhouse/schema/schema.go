package schema

import (
	"fmt"
	"strings"
)

// This file is the one place that says what the tables look like: the
// common columns, the typed columns of each source with the record member
// each is read from, the engine, and the DDL built from them. The golden
// files in testdata/ddl hold the DDL it gives for the default
// configuration.

// DedupWindow is the non_replicated_deduplication_window of every table: how
// many recent insert blocks (per table) ClickHouse remembers, so that an
// insert repeated with the same insert_deduplication_token is stored once.
// At about one insert a second per table it covers a quarter of an hour of
// retries.
const DedupWindow = 1000

// ViewSuffix names the view of the latest version of each edge alert: table
// prefix + "edge_alerts" + ViewSuffix.
const ViewSuffix = "_latest"

// Kind says how a typed column's value is read from the record's JSON and
// what it is when the member is missing or of another type.
type Kind uint8

const (
	// KindString: a JSON string (unescaped), or the literal text of a
	// number or boolean (edge enumerations are integers); null, an object
	// or an array give "".
	KindString Kind = iota
	// KindInt64: a JSON integer that fits Int64; anything else (a string
	// of digits, a fraction, null) gives 0.
	KindInt64
	// KindTime: a time read as the record time is (epoch milliseconds, or
	// an ISO 8601 string, see record.ParseTime); anything else gives
	// 1970-01-01T00:00:00Z.
	KindTime
)

// Types of ClickHouse columns used here.
const (
	typeString     = "String"
	typeLowCard    = "LowCardinality(String)"
	typeInt64      = "Int64"
	typeDateTime64 = "DateTime64(3, 'UTC')"
)

// Field is a typed column pulled out of the record.
type Field struct {
	// Column is the ClickHouse column name.
	Column string
	// Type is its ClickHouse type.
	Type string
	// Path is the record member it is read from: one name, or an object
	// member and the name inside it ("srcEntityId", "mid").
	Path []string
	// Kind says how the value is read.
	Kind Kind
}

func str(col, member string) Field {
	return Field{Column: col, Type: typeString, Path: strings.Split(member, "."), Kind: KindString}
}

func lowCard(col, member string) Field {
	return Field{Column: col, Type: typeLowCard, Path: strings.Split(member, "."), Kind: KindString}
}

func int64Field(col, member string) Field {
	return Field{Column: col, Type: typeInt64, Path: strings.Split(member, "."), Kind: KindInt64}
}

func timeField(col, member string) Field {
	return Field{Column: col, Type: typeDateTime64, Path: strings.Split(member, "."), Kind: KindTime}
}

// Table is the table of one source.
type Table struct {
	// Source is the source name (CONTRACT C3, C6); the table is named
	// after it, behind the configured prefix.
	Source string
	// Fields are the typed columns, after the common ones.
	Fields []Field
}

// Sources lists the source names the sink has a table for, in the order
// Ensure creates them.
func Sources() []string {
	specs := Tables()
	out := make([]string, len(specs))
	for i, t := range specs {
		out[i] = t.Source
	}
	return out
}

// Tables returns the tables of every source. Member names and types are
// those of the seed ("Activity records", "Edge resources").
func Tables() []Table {
	return []Table{
		{Source: "changed_files", Fields: []Field{
			int64Field("mid", "mid"),
			str("file_path", "filePath"),
			str("filedata_hash", "filedataHash"),
			int64Field("size", "size"),
		}},
		{Source: "connections", Fields: []Field{
			int64Field("src_mid", "srcEntityId.mid"),
			int64Field("dst_mid", "dstEntityId.mid"),
			int64Field("src_in_bytes", "srcInBytes"),
			int64Field("src_out_bytes", "srcOutBytes"),
			int64Field("dst_in_bytes", "dstInBytes"),
			int64Field("dst_out_bytes", "dstOutBytes"),
			int64Field("num_conns", "numConns"),
		}},
		{Source: "dns", Fields: []Field{
			int64Field("mid", "mid"),
			str("fqdn", "fqdn"),
			str("host_ip_addr", "hostIpAddr"),
		}},
		{Source: "user_logins", Fields: []Field{
			int64Field("mid", "mid"),
			str("username", "username"),
			lowCard("activity_type", "activityType"),
			str("source_ip_addr", "sourceIpAddr"),
		}},
		{Source: "cloud_activities", Fields: []Field{
			lowCard("event_type", "eventType"),
			lowCard("event_model", "eventModel"),
			int64Field("event_id", "eventId"),
		}},
		{Source: "audit_logs", Fields: []Field{
			str("account_name", "accountName"),
			str("user_name", "userName"),
			lowCard("event_name", "eventName"),
			lowCard("user_action", "userAction"),
		}},
		{Source: "agent_info", Fields: []Field{
			int64Field("mid", "mid"),
			str("hostname", "hostname"),
			lowCard("os", "os"),
			lowCard("status", "status"),
			lowCard("agent_version", "agentVersion"),
		}},
		{Source: "edge_audit_events", Fields: []Field{
			lowCard("method", "method"),
			str("path", "path"),
			int64Field("response_status", "response_status"),
			str("user_login", "user_login"),
			str("client_ip", "client_ip"),
		}},
		{Source: "edge_alerts", Fields: []Field{
			str("uuid", "uuid"),
			lowCard("severity", "severity"),
			lowCard("status", "status"),
			lowCard("incident_status", "incident_status"),
			lowCard("event_type", "event_type"),
			timeField("update_time", "update_time"),
		}},
	}
}

// Column is one column of a table as the DDL has it.
type Column struct {
	Name  string
	Type  string
	Codec string // "" or e.g. "ZSTD(1)"
}

// Positions of the common columns in every table.
const (
	ColID = iota
	ColAccount
	ColTime
	ColWindowStart
	ColWindowEnd
	ColFetchedAt
	ColRecord
	NumCommon
)

// commonColumns are the envelope's fields (CONTRACT C7), first in every
// table. The raw record is kept byte for byte; ZSTD shrinks JSON several
// times better than the default LZ4.
func commonColumns() []Column {
	return []Column{
		ColID:          {Name: "id", Type: typeString},
		ColAccount:     {Name: "account", Type: typeLowCard},
		ColTime:        {Name: "time", Type: typeDateTime64},
		ColWindowStart: {Name: "window_start", Type: typeDateTime64},
		ColWindowEnd:   {Name: "window_end", Type: typeDateTime64},
		ColFetchedAt:   {Name: "fetched_at", Type: typeDateTime64},
		ColRecord:      {Name: "record", Type: typeString, Codec: "ZSTD(1)"},
	}
}

// columns returns every column of t: the common ones, then the typed ones.
func (t Table) Columns() []Column {
	cols := commonColumns()
	for _, f := range t.Fields {
		cols = append(cols, Column{Name: f.Column, Type: f.Type})
	}
	return cols
}

// quoteIdent quotes an identifier for ClickHouse SQL.
func quoteIdent(s string) string {
	return "`" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "`", "\\`") + "`"
}

// PlainIdent reports whether s is a plain identifier
// ([A-Za-z_][A-Za-z0-9_]*, at most 128 bytes): the database and the table
// prefix (Names) become parts of identifiers in the DDL, so nothing that
// would need quoting is allowed there.
func PlainIdent(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Names is where the tables of one configuration live.
type Names struct {
	Database string
	Prefix   string
}

func (n Names) Table(source string) string { return n.Prefix + source }

// qualified is `db`.`prefix+name`.
func (n Names) Qualified(name string) string {
	return quoteIdent(n.Database) + "." + quoteIdent(n.Prefix+name)
}

func (c Column) ddl() string {
	s := quoteIdent(c.Name) + " " + c.Type
	if c.Codec != "" {
		s += " CODEC(" + c.Codec + ")"
	}
	return s
}

// createDatabaseSQL creates the database when it is missing.
func createDatabaseSQL(n Names) string {
	return "CREATE DATABASE IF NOT EXISTS " + quoteIdent(n.Database)
}

// createTableSQL is the DDL of t's table.
//
// ReplacingMergeTree(fetched_at) keeps one row per sorting key, the one
// fetched last, when parts merge (or at query time with FINAL): the id is in
// the sorting key, so a record delivered twice (at least once, C7) is stored
// once in the end. Partitions are months of record time, so old months can
// be dropped or moved whole.
func createTableSQL(n Names, t Table) string {
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS " + n.Qualified(t.Source) + "\n(\n")
	cols := t.Columns()
	for i, c := range cols {
		b.WriteString("    " + c.ddl())
		if i < len(cols)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString(")\n")
	b.WriteString("ENGINE = ReplacingMergeTree(fetched_at)\n")
	b.WriteString("PARTITION BY toYYYYMM(time)\n")
	b.WriteString("ORDER BY (account, time, id)\n")
	fmt.Fprintf(&b, "SETTINGS non_replicated_deduplication_window = %d\n", DedupWindow)
	return b.String()
}

// addColumnSQL adds a column that an older schema lacks.
func addColumnSQL(n Names, source string, c Column) string {
	return "ALTER TABLE " + n.Qualified(source) + " ADD COLUMN IF NOT EXISTS " + c.ddl()
}

// dedupWindowSQL turns on insert deduplication on a table created without
// it (by hand or by an older version).
func dedupWindowSQL(n Names, source string) string {
	return fmt.Sprintf("ALTER TABLE %s MODIFY SETTING non_replicated_deduplication_window = %d", n.Qualified(source), DedupWindow)
}

// latestAlertsViewSQL is the view of the latest version of every edge alert
// (CONTRACT C6: an alert changes after creation, and each version is a
// record of its own, with its own id). The latest is the one with the
// greatest update_time, ties broken by fetched_at. One row per account and
// uuid: the same uuid seen under two sub-accounts stays two rows.
func latestAlertsViewSQL(n Names) string {
	const src = "edge_alerts"
	var spec Table
	for _, t := range Tables() {
		if t.Source == src {
			spec = t
		}
	}
	var cols []string
	for _, c := range spec.Columns() {
		if c.Name != "account" && c.Name != "uuid" {
			cols = append(cols, c.Name)
		}
	}
	var b strings.Builder
	b.WriteString("CREATE OR REPLACE VIEW " + n.Qualified(src+ViewSuffix) + " AS\n")
	b.WriteString("SELECT\n    account,\n    uuid")
	for i, c := range cols {
		fmt.Fprintf(&b, ",\n    latest.%d AS %s", i+1, quoteIdent(c))
	}
	b.WriteString("\nFROM\n(\n    SELECT\n        account,\n        uuid,\n")
	b.WriteString("        argMax(tuple(" + strings.Join(quoteAll(cols), ", ") + "), tuple(update_time, fetched_at)) AS latest\n")
	b.WriteString("    FROM " + n.Qualified(src) + "\n")
	b.WriteString("    GROUP BY account, uuid\n)\n")
	return b.String()
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = quoteIdent(s)
	}
	return out
}

// InsertSQL is the INSERT of t's rows, columns named in the order of
// t.columns.
func InsertSQL(n Names, t Table) string {
	cols := t.Columns()
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = quoteIdent(c.Name)
	}
	return "INSERT INTO " + n.Qualified(t.Source) + " (" + strings.Join(q, ", ") + ")"
}

// normType reduces a column type to what matters for writing it: the
// sink's values fit a column whose type differs only by LowCardinality or
// by a DateTime64's time zone (the stored instant is the same).
func normType(t string) string {
	t = strings.ReplaceAll(t, " ", "")
	if strings.HasPrefix(t, "LowCardinality(") && strings.HasSuffix(t, ")") {
		t = t[len("LowCardinality(") : len(t)-1]
	}
	if strings.HasPrefix(t, "DateTime64(") {
		if i := strings.IndexByte(t, ','); i > 0 {
			t = t[:i] + ")"
		}
	}
	return t
}

// compatibleType reports whether a column of type found can take the
// values of a column of type want.
func compatibleType(found, want string) bool { return normType(found) == normType(want) }
