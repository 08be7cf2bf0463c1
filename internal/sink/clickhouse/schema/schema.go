package schema

import (
	"strings"
	"time"
)

// This file is the one place that says what the tables look like: the
// common columns, the typed columns of each source with the record member
// each is read from, their codecs, the sorting key and the skip indexes of
// each table. ddl.go turns them into statements; the golden files in
// testdata/ddl hold the statements of the default configuration and of a
// cluster.

// DedupWindow is the non_replicated_deduplication_window of every table of a
// single server: how many recent insert blocks (per table) ClickHouse
// remembers, so that an insert repeated with the same
// insert_deduplication_token is stored once. At about one insert a second
// per table it covers a quarter of an hour of retries. Replicated tables
// keep replicated_deduplication_window, 1,000 or more by default on every
// supported server.
const DedupWindow = 1000

// ViewSuffix names the views of the latest version of each edge alert and
// of each agent: table prefix + "edge_alerts" (or "agent_info") +
// ViewSuffix.
const ViewSuffix = "_latest"

// LocalSuffix names the replicated table of each source on a cluster: the
// Distributed table has the source's name, the table holding the rows on
// each server that name + LocalSuffix.
const LocalSuffix = "_local"

// ReplicaPath is the Keeper path of each replicated table: the {shard} and
// {replica} macros must be defined on every server of the cluster.
const ReplicaPath = "/clickhouse/tables/{shard}/{database}/{table}"

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
	// KindIP: a JSON string holding an IPv4 or IPv6 address (no zone),
	// stored as IPv6 (an IPv4 address as ::ffff:a.b.c.d); anything else
	// (a host name, an address with a zone, a number, null) gives NULL.
	KindIP
	// KindUInt8: a JSON integer from 0 to 255, or a string holding one
	// (edge enumerations are integers; the String columns of older tables
	// took both); anything else gives NULL.
	KindUInt8
)

// Types of ClickHouse columns used here.
const (
	typeString     = "String"
	typeLowCard    = "LowCardinality(String)"
	typeInt64      = "Int64"
	typeDateTime64 = "DateTime64(3, 'UTC')"
	typeNullString = "Nullable(String)"
	typeIP         = "Nullable(IPv6)"
	typeUInt8      = "Nullable(UInt8)"
	typeIPs        = "Array(IPv6)"
)

// Codecs, written as system.columns shows them (compression_codec without
// "CODEC(...)"), so that a column can be compared with what it should be.
// Times are close to their neighbours in the sorting key (record times of
// one day and key, window bounds and fetch times shared by whole pages):
// Delta leaves small numbers that ZSTD packs. Strings, numbers and the raw
// record compress better with ZSTD(1) than with the default LZ4, at a
// decompression speed that does not matter next to the disk. What was
// measured is in docs/clickhouse.md.
const (
	codecTime = "Delta(8), ZSTD(1)"
	codecZSTD = "ZSTD(1)"
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

// ip is an IP address column: IPv6, which holds IPv4 addresses too
// (v4-mapped), so that one column serves both families and the CIDR
// functions; Nullable, so that a missing or malformed address is NULL
// instead of a made-up "::". 16 bytes a row before compression, against
// about 14 for the text; measured in docs/clickhouse.md.
func ip(col, member string) Field {
	return Field{Column: col, Type: typeIP, Path: strings.Split(member, "."), Kind: KindIP}
}

// uint8Field is a small integer enumeration (an edge alert's severity).
func uint8Field(col, member string) Field {
	return Field{Column: col, Type: typeUInt8, Path: strings.Split(member, "."), Kind: KindUInt8}
}

// Table is the table of one source.
type Table struct {
	// Source is the source name (CONTRACT C3, C6); the table is named
	// after it, behind the configured prefix.
	Source string
	// Fields are the typed columns, after the common ones.
	Fields []Field
	// Key is the column most queries of the source name besides a time
	// range (a user name, an FQDN, an alert's uuid): it follows the day in
	// the sorting key (see SortingKey).
	Key string
	// Bloom are the columns with a bloom_filter skip index: values users
	// search for that are not repeated in every granule: the record id,
	// IPs, hashes, and the key when it is a string of many values (user
	// names, FQDNs, uuids: a search without a time range, or in days
	// holding less than a granule each, then skips the granules without
	// it).
	Bloom []string
	// Derived are columns ClickHouse computes from the record column
	// itself (Column.Expr): values the sink's scan of the record does not
	// read (arrays of objects), inserted by nobody, and filled in for rows
	// stored before the column existed. They follow the Fields.
	Derived []Column
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
		{Source: "changed_files", Key: "mid", Bloom: []string{"id", "filedata_hash", "file_path"}, Fields: []Field{
			int64Field("mid", "mid"),
			str("file_path", "filePath"),
			str("filedata_hash", "filedataHash"),
			int64Field("size", "size"),
		}},
		{Source: "connections", Key: "src_mid", Bloom: []string{"id", "src_ips", "dst_ips"}, Fields: []Field{
			int64Field("src_mid", "srcEntityId.mid"),
			int64Field("dst_mid", "dstEntityId.mid"),
			int64Field("src_in_bytes", "srcInBytes"),
			int64Field("src_out_bytes", "srcOutBytes"),
			int64Field("dst_in_bytes", "dstInBytes"),
			int64Field("dst_out_bytes", "dstOutBytes"),
			int64Field("num_conns", "numConns"),
		}, Derived: []Column{
			endpointIPs("src_ips", "src_ip_addr"),
			endpointIPs("dst_ips", "dst_ip_addr"),
		}},
		{Source: "dns", Key: "fqdn", Bloom: []string{"id", "fqdn", "host_ip_addr"}, Fields: []Field{
			int64Field("mid", "mid"),
			str("fqdn", "fqdn"),
			ip("host_ip_addr", "hostIpAddr"),
		}},
		{Source: "user_logins", Key: "username", Bloom: []string{"id", "username", "source_ip_addr"}, Fields: []Field{
			int64Field("mid", "mid"),
			str("username", "username"),
			lowCard("activity_type", "activityType"),
			ip("source_ip_addr", "sourceIpAddr"),
		}},
		{Source: "cloud_activities", Key: "event_type", Bloom: []string{"id", "event_id"}, Fields: []Field{
			lowCard("event_type", "eventType"),
			lowCard("event_model", "eventModel"),
			int64Field("event_id", "eventId"),
		}},
		{Source: "audit_logs", Key: "user_name", Bloom: []string{"id", "user_name"}, Fields: []Field{
			lowCard("account_name", "accountName"),
			str("user_name", "userName"),
			lowCard("event_name", "eventName"),
			lowCard("user_action", "userAction"),
		}},
		{Source: "agent_info", Key: "hostname", Bloom: []string{"id", "hostname", "mid", "ip_addr"}, Fields: []Field{
			int64Field("mid", "mid"),
			str("hostname", "hostname"),
			lowCard("os", "os"),
			lowCard("status", "status"),
			lowCard("agent_version", "agentVersion"),
			ip("ip_addr", "ipAddr"),
			timeField("last_update", "lastUpdate"),
		}},
		{Source: "edge_audit_events", Key: "user_login", Bloom: []string{"id", "user_login", "client_ip"}, Fields: []Field{
			lowCard("method", "method"),
			str("path", "path"),
			int64Field("response_status", "response_status"),
			str("user_login", "user_login"),
			ip("client_ip", "client_ip"),
		}},
		{Source: "edge_alerts", Key: "uuid", Bloom: []string{"id", "uuid"}, Fields: []Field{
			str("uuid", "uuid"),
			uint8Field("severity", "severity"),
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
	Codec string // "" (the server's default, LZ4) or e.g. "ZSTD(1)"
	// Expr, when set, is the MATERIALIZED expression of a derived column
	// (Table.Derived): the server computes it from the other columns of
	// each row inserted, and, for the rows of parts written before the
	// column was added, when they are read (until ALTER TABLE ...
	// MATERIALIZE COLUMN stores it). An insert never names it.
	Expr string
}

// endpointIPs is a column of the connections table holding one address of
// each element of the record's endpointDetails ({dst_ip_addr, dst_port,
// protocol, src_ip_addr}, seed "Activity records"), in the order of the
// elements: src_ips[i] and dst_ips[i] are the two ends of endpointDetails[i],
// so that "who talked to 1.2.3.4" is has(dst_ips, toIPv6('1.2.3.4')), a
// bloom_filter index lookup instead of a JSON scan (docs/clickhouse.md).
// IPv4 addresses are stored v4-mapped (::ffff:1.2.3.4), as in the other IP
// columns; an element whose address is missing or no address (a host
// name, an address with a zone) holds :: (the unspecified address, which
// no endpoint has), so that the two arrays stay aligned; a record without
// endpointDetails (or no JSON) has empty arrays.
//
// A derived column, not a Field: the sink's scan reads members and members
// of objects, not arrays of objects, and the server's expression is the
// one definition, for new rows and for those stored before the column
// (CONTRACT C7: the record column stays the record byte for byte).
func endpointIPs(col, member string) Column {
	return Column{Name: col, Type: typeIPs, Codec: codecZSTD,
		Expr: "arrayMap(e -> toIPv6OrDefault(JSONExtractString(e, " + quoteString(member) + ")), JSONExtractArrayRaw(record, 'endpointDetails'))"}
}

// TenantColumn is the column of the tenant (record.Envelope.Tenant).
const TenantColumn = "tenant"

// Positions of the common columns in every table.
const (
	ColID = iota
	ColAccount
	ColTime
	ColWindowStart
	ColWindowEnd
	ColFetchedAt
	ColRecord
	ColOriginal
	ColTenant
	NumCommon
)

// commonColumns are the envelope's fields (CONTRACT C7), first in every
// table. The raw record is kept byte for byte; record_original is NULL but
// for a record received with a flaw (record.Envelope.Original: invalid
// UTF-8 or no JSON at all), whose bytes as sent it holds while record holds
// the repaired copy or null, so that nothing the API sent is lost. tenant
// is the configured tenant the record was read for ("" in the one-tenant
// form, and in the rows of tables made before the column); it is first in
// the sorting key, so two tenants' byte-identical records stay two rows.
// It has no DEFAULT expression (its default is the empty string all the same): ClickHouse
// appends a column to an existing table's sorting key only when the column
// is added in the same ALTER without one (tenantMigrationSQL).
func commonColumns() []Column {
	return []Column{
		ColID:          {Name: "id", Type: typeString, Codec: codecZSTD},
		ColAccount:     {Name: "account", Type: typeLowCard},
		ColTime:        {Name: "time", Type: typeDateTime64, Codec: codecTime},
		ColWindowStart: {Name: "window_start", Type: typeDateTime64, Codec: codecTime},
		ColWindowEnd:   {Name: "window_end", Type: typeDateTime64, Codec: codecTime},
		ColFetchedAt:   {Name: "fetched_at", Type: typeDateTime64, Codec: codecTime},
		ColRecord:      {Name: "record", Type: typeString, Codec: codecZSTD},
		ColOriginal:    {Name: "record_original", Type: typeNullString, Codec: codecZSTD},
		ColTenant:      {Name: TenantColumn, Type: typeLowCard},
	}
}

// codecOf is the codec of a typed column of type typ.
func codecOf(typ string) string {
	switch typ {
	case typeDateTime64:
		return codecTime
	case typeString, typeInt64, typeIP, typeUInt8:
		return codecZSTD
	}
	return "" // LowCardinality: a dictionary of few values, small already
}

// Columns returns the columns of t an insert fills: the common ones, then
// the typed ones.
func (t Table) Columns() []Column {
	cols := commonColumns()
	for _, f := range t.Fields {
		cols = append(cols, Column{Name: f.Column, Type: f.Type, Codec: codecOf(f.Type)})
	}
	return cols
}

// AllColumns returns every column of t's table: Columns, then the derived
// ones the server computes (Table.Derived).
func (t Table) AllColumns() []Column {
	return append(t.Columns(), t.Derived...)
}

// SortingKey is t's ORDER BY: the tenant, account, the UTC day of the
// record time, t.Key, the record time and last the record id.
//
// The tenant first keeps tenants apart (issue 32): the same record of two
// tenants has the same id, account and time, and would be one row if the
// tenant were not in the key. A query of one tenant reads its granules
// only. A table made before the tenant column gets it appended to its key
// instead (tenantMigrationSQL), which keeps tenants apart as well.
//
// The day before the key serves both kinds of query: a time range alone
// reads the days it covers, and a key within a time range ("one user's
// logins over 30 days", "one FQDN's DNS over 7 days") reads, in each day,
// only the granules of that key, instead of every row of the range.
//
// ReplacingMergeTree keeps one row per sorting key: with the id last, two
// rows have the same key only if they have the same id, and every element
// before it is a function of the record, its account and tenant (the day and the
// time are the record time, the key a member of the record), so two rows of
// one id have the same key and still become one. The exception is a record
// whose time is unreadable (record.FlawTime): its time is the start of the
// window that fetched it, which may differ between two fetches.
func (t Table) SortingKey() []string {
	return []string{TenantColumn, "account", "toDate(time)", t.Key, "time", "id"}
}

// PrimaryKey is the sorting key up to t.Key: tenant, account, day, key. Without
// the id, the index kept in memory holds no 64 hex digits a granule that no
// query ranges over. Without the record time, a condition on the time
// ("time >= now() - INTERVAL 7 DAY") reaches the day: ClickHouse matches
// such a condition to the time column itself when the primary key holds
// it, which, after the key, excludes nothing, and then reads every granule
// of the month's partition instead of the days asked for (measured:
// docs/clickhouse.md). Within a day and key, rows stay sorted by time.
func (t Table) PrimaryKey() []string {
	return t.SortingKey()[:4]
}

// Options say where the tables live and how they are kept: the parts of
// the sink's configuration that shape the DDL.
type Options struct {
	// Database holds the tables.
	Database string
	// Prefix is put before every table and view name.
	Prefix string
	// Cluster, when set, is the cluster (remote_servers) whose servers
	// get Replicated local tables and a Distributed table each, created
	// ON CLUSTER.
	Cluster string
	// TTL, when positive, is how long rows are kept after their record
	// time (0: for ever; the collector leaves a TTL set by hand alone).
	TTL time.Duration
}

// Table is the name of the table of source that inserts and queries use:
// the Distributed table on a cluster.
func (o Options) Table(source string) string { return o.Prefix + source }

// LocalTable is the name of the MergeTree table of source: Table on a
// single server, Table + LocalSuffix on a cluster.
func (o Options) LocalTable(source string) string {
	if o.Cluster != "" {
		return o.Table(source) + LocalSuffix
	}
	return o.Table(source)
}

// Qualified is `database`.`prefix+name`.
func (o Options) Qualified(name string) string {
	return quoteIdent(o.Database) + "." + quoteIdent(o.Prefix+name)
}

// qualifiedLocal is the qualified name of the MergeTree table of source.
func (o Options) qualifiedLocal(source string) string {
	return quoteIdent(o.Database) + "." + quoteIdent(o.LocalTable(source))
}

// onCluster is the ON CLUSTER clause of every statement, or "".
func (o Options) onCluster() string {
	if o.Cluster == "" {
		return ""
	}
	return " ON CLUSTER " + quoteIdent(o.Cluster)
}

// ttlDays is the TTL in whole days (0: none); Validate of the sink's
// configuration allows nothing else.
func (o Options) ttlDays() int64 { return int64(o.TTL / (24 * time.Hour)) }

// quoteIdent quotes an identifier for ClickHouse SQL.
func quoteIdent(s string) string {
	return "`" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "`", "\\`") + "`"
}

// quoteString quotes a string literal for ClickHouse SQL.
func quoteString(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}

// PlainIdent reports whether s is a plain identifier
// ([A-Za-z_][A-Za-z0-9_]*, at most 128 bytes): the database and the table
// prefix (Options) become parts of identifiers in the DDL, so nothing that
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

// ClusterName reports whether s can name a cluster here: letters, digits,
// '_', '-' and '.', at most 128 bytes (remote_servers element names).
func ClusterName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '-' || c == '.' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
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

// convertibleType reports whether Ensure converts a column of type found
// to want in place (ALTER TABLE ... MODIFY COLUMN): the String columns in
// which older versions kept IP addresses and severities. The conversion
// cannot fail on any value: ClickHouse casts a String that is no address
// (or no number from 0 to 255) to NULL of the Nullable types, so an empty
// or malformed value of an old row becomes NULL, as the sink writes it now.
func convertibleType(found, want string) bool {
	return normType(found) == typeString && (want == typeIP || want == typeUInt8)
}
