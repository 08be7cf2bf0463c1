package verify

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/svcexport/collector/internal/sink/clickhouse/schema"
)

// codeUnknownTable is ClickHouse's UNKNOWN_TABLE: a source whose table was
// never made holds nothing.
const codeUnknownTable = 60

// ClickHouse counts what the ClickHouse sink stored (tables: package
// internal/sink/clickhouse/schema): per stream and run of adjacent
// targets, one query of the distinct ids (edge alerts: uuids) per UTC day
// of the record time, over the table's rows with or without a merge (at
// least once delivery stores a record more than once until one, C7).
type ClickHouse struct {
	// Conn is an open connection; the caller closes it.
	Conn driver.Conn
	// Names are the sink's database and table prefix.
	Names schema.Options
	// Timeout bounds each query; default one minute.
	Timeout time.Duration
}

var _ Delivered = ClickHouse{}

// Delivered implements Delivered.
func (c ClickHouse) Delivered(ctx context.Context, targets []Target) (map[Key]int64, error) {
	out := map[Key]int64{}
	for _, run := range runs(targets) {
		if err := c.count(ctx, run, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// runs groups targets by stream into runs of adjacent targets (one's End
// is the next one's Start), each of which one query can count by day.
func runs(targets []Target) [][]Target {
	ts := slices.Clone(targets)
	slices.SortFunc(ts, func(a, b Target) int {
		return cmp.Or(cmp.Compare(a.Stream.Tenant, b.Stream.Tenant), cmp.Compare(a.Stream.Source, b.Stream.Source), cmp.Compare(a.Stream.Account, b.Stream.Account), a.Start.Compare(b.Start))
	})
	var out [][]Target
	for i, t := range ts {
		if i > 0 {
			last := out[len(out)-1]
			if p := last[len(last)-1]; p.Stream == t.Stream && p.End.Equal(t.Start) {
				out[len(out)-1] = append(last, t)
				continue
			}
		}
		out = append(out, []Target{t})
	}
	return out
}

func (c ClickHouse) count(ctx context.Context, run []Target, out map[Key]int64) error {
	k := run[0].Stream
	col := "id"
	if k.Source == alertsSource {
		col = "uuid"
	}
	start, end := run[0].Start, run[len(run)-1].End
	// An edge stream holds the records of every envelope account (C6: the
	// edge API has no account selection): no account condition.
	account, args := "account = ? AND ", []any{k.Account, start.UnixMilli(), end.UnixMilli()}
	if run[0].Edge {
		account, args = "", args[1:]
	}
	// A tenant's rows are those of its tenant column (issue 32). The
	// one-tenant form asks no tenant: its rows are all of a table that
	// may predate the column.
	if k.Tenant != "" {
		account, args = "tenant = ? AND "+account, append([]any{k.Tenant}, args...)
	}
	q := fmt.Sprintf("SELECT toDate(time, 'UTC') AS d, uniqExact(%s) FROM %s "+
		"WHERE %stime >= fromUnixTimestamp64Milli(toInt64(?), 'UTC') AND time < fromUnixTimestamp64Milli(toInt64(?), 'UTC') "+
		// An inventory snapshot's time is its window's end (a window's
		// records lie before it, C3): in no window the API counts.
		"AND time < window_end "+
		"GROUP BY d ORDER BY d", col, c.Names.Qualified(k.Source), account)
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	qctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rows, err := c.Conn.Query(qctx, q, args...)
	if ex := (*ch.Exception)(nil); errors.As(err, &ex) && ex.Code == codeUnknownTable {
		return nil
	}
	if err != nil {
		return fmt.Errorf("clickhouse: count %s: %w", k, err)
	}
	defer rows.Close()
	for rows.Next() {
		var d time.Time
		var n uint64
		if err := rows.Scan(&d, &n); err != nil {
			return fmt.Errorf("clickhouse: count %s: %w", k, err)
		}
		day := time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, time.UTC)
		out[Key{Stream: k, Day: day}] = int64(n)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("clickhouse: count %s: %w", k, err)
	}
	return nil
}
