package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/svcexport/collector/internal/record"
)

// Counter is the API's count of the records of stream with a record time
// in [start, end): a core window's first-page totalRows (C3), the rows of
// an edge window (C6). The command wires one on the API client.
type Counter interface {
	Count(ctx context.Context, stream record.Stream, start, end time.Time) (int64, error)
}

// CounterFunc adapts a function to Counter.
type CounterFunc func(ctx context.Context, stream record.Stream, start, end time.Time) (int64, error)

// Count implements Counter.
func (f CounterFunc) Count(ctx context.Context, stream record.Stream, start, end time.Time) (int64, error) {
	return f(ctx, stream, start, end)
}

// OnceCounter asks the API for one window once: its count, and whether
// the answer may be cut (a core totalRows at or over the cap, C3; an edge
// answer of max_rows rows, C6).
type OnceCounter interface {
	CountOnce(ctx context.Context, stream record.Stream, start, end time.Time) (n int64, cut bool, err error)
}

// Splitting is a Counter on once that asks a window whose answer may be
// cut again in two halves, and so on, down to minSpan (a window that
// small is taken as answered: its count may then be low, never high).
func Splitting(once OnceCounter, minSpan time.Duration) Counter {
	var count CounterFunc
	count = func(ctx context.Context, k record.Stream, start, end time.Time) (int64, error) {
		n, cut, err := once.CountOnce(ctx, k, start, end)
		if err != nil || !cut || end.Sub(start) <= minSpan {
			return n, err
		}
		mid := start.Add((end.Sub(start) / 2).Truncate(time.Millisecond))
		if !mid.After(start) {
			return n, nil
		}
		a, err := count(ctx, k, start, mid)
		if err != nil {
			return 0, err
		}
		b, err := count(ctx, k, mid, end)
		return a + b, err
	}
	return count
}

// Delivered counts what a sink holds for each target: the distinct
// records (by C7 id; edge alerts by uuid) of the target's stream whose
// record time lies in [Start, End). A target the sink holds nothing of may
// be missing from the map (it counts as 0).
type Delivered interface {
	Delivered(ctx context.Context, targets []Target) (map[Key]int64, error)
}

// Statuses of a Row.
const (
	StatusOK    = "ok"
	StatusGap   = "gap"
	StatusExtra = "extra"
	// StatusPruned: the sink has fewer records than the API because its
	// retention deleted files of the day on purpose (Pruner); not a gap.
	StatusPruned = "pruned"
)

// Pruner is a Delivered that knows which targets lost records to the
// sink's own retention (the file sink's record of deleted files). Run
// reports such a target with fewer records as pruned, not as a gap.
type Pruner interface {
	Pruned(ctx context.Context, targets []Target) (map[Key]bool, error)
}

// Row is the verdict on one target.
type Row struct {
	// Tenant is the stream's tenant; "" (absent) in the one-tenant form.
	Tenant    string    `json:"tenant,omitempty"`
	Source    string    `json:"source"`
	Account   string    `json:"account"`
	Day       string    `json:"day"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	API       int64     `json:"api"`
	Delivered int64     `json:"delivered"`
	// Status: ok, gap (the API has more), extra (the sink has more).
	Status string `json:"status"`
	// Pending counts the windows of the day with a recheck still to come.
	Pending int `json:"pending_rechecks"`
	// Grown counts those of the pending windows whose count at the API
	// grew since they were fetched (asked only for a gap): a recheck will
	// fetch their late records. A gap with pending rechecks and none
	// grown is no late data: the windows were cut short when fetched (or
	// the sink lost records), and no recheck will close it.
	Grown int `json:"grown_windows"`
	// Cause says why a gap is one, as far as the API tells (CauseLate,
	// CauseCutShort, CauseLost); empty for other rows.
	Cause string `json:"cause,omitempty"`
}

// Causes of a gap (Row.Cause).
const (
	// CauseLate: some pending window grew since it was fetched (C3: late
	// data); its recheck will fetch the records, the gap may close.
	CauseLate = "late"
	// CauseCutShort: windows with a recheck to come, none of them grown:
	// the records were there when the windows were fetched and are
	// missing (a chain cut short, a sink that lost them); no recheck
	// will close the gap.
	CauseCutShort = "cut_short"
	// CauseLost: no recheck to come.
	CauseLost = "lost"
)

// Report is the verdict on a plan.
type Report struct {
	Rows []Row `json:"rows"`
	// Gaps, Extra and Pruned count the rows of each status.
	Gaps   int `json:"gaps"`
	Extra  int `json:"extra"`
	Pruned int `json:"pruned"`
	// Missing is the sum of API minus delivered over the gaps.
	Missing int64 `json:"missing"`
	// Requests is how many times the Counter was asked.
	Requests int `json:"requests"`
}

// Run asks api for every target of p (each of its windows in turn), asks
// sink for what it delivered, and compares. It stops at the first error.
func Run(ctx context.Context, p Plan, api Counter, sink Delivered) (Report, error) {
	var r Report
	got, err := sink.Delivered(ctx, p.Targets)
	if err != nil {
		return r, fmt.Errorf("count what the sink delivered: %w", err)
	}
	var pruned map[Key]bool
	if pr, ok := sink.(Pruner); ok {
		if pruned, err = pr.Pruned(ctx, p.Targets); err != nil {
			return r, fmt.Errorf("read what the sink's retention deleted: %w", err)
		}
	}
	for _, t := range p.Targets {
		var n int64
		for _, w := range t.Windows() {
			c, err := api.Count(ctx, t.Stream, w[0], w[1])
			r.Requests++
			if err != nil {
				return r, fmt.Errorf("count %s [%s, %s) at the API: %w", t.Stream, w[0].Format(time.RFC3339), w[1].Format(time.RFC3339), err)
			}
			n += c
		}
		r.add(t, n, got[t.Key()])
		if row := &r.Rows[len(r.Rows)-1]; row.Status == StatusGap && pruned[t.Key()] {
			row.Status = StatusPruned
			r.Gaps--
			r.Missing -= n - row.Delivered
			r.Pruned++
		}
		if row := &r.Rows[len(r.Rows)-1]; row.Status == StatusGap {
			for _, w := range t.Rechecked {
				c, err := api.Count(ctx, t.Stream, w.Start, w.End)
				r.Requests++
				if err != nil {
					return r, fmt.Errorf("count %s window [%s, %s) at the API: %w", t.Stream, w.Start.Format(time.RFC3339), w.End.Format(time.RFC3339), err)
				}
				if c > w.Count {
					row.Grown++
				}
			}
			switch {
			case row.Grown > 0:
				row.Cause = CauseLate
			case row.Pending > 0:
				row.Cause = CauseCutShort
			default:
				row.Cause = CauseLost
			}
		}
	}
	return r, nil
}

func (r *Report) add(t Target, api, delivered int64) {
	row := Row{Tenant: t.Stream.Tenant, Source: t.Stream.Source, Account: t.Stream.Account, Day: t.Day.Format(time.DateOnly),
		Start: t.Start, End: t.End, API: api, Delivered: delivered, Status: StatusOK, Pending: t.Pending}
	switch {
	case api > delivered:
		row.Status = StatusGap
		r.Gaps++
		r.Missing += api - delivered
	case api < delivered:
		row.Status = StatusExtra
		r.Extra++
	}
	r.Rows = append(r.Rows, row)
}

// Merge adds the rows and counts of o (another tenant's report) to r.
func (r *Report) Merge(o Report) {
	r.Rows = append(r.Rows, o.Rows...)
	r.Gaps += o.Gaps
	r.Extra += o.Extra
	r.Pruned += o.Pruned
	r.Missing += o.Missing
	r.Requests += o.Requests
}

// ExitCode is the command's exit status: 1 when some day has a gap, else
// 0.
func (r Report) ExitCode() int {
	if r.Gaps > 0 {
		return 1
	}
	return 0
}

// WriteTable prints the report as an aligned table and a summary line.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	tenants := slices.ContainsFunc(r.Rows, func(row Row) bool { return row.Tenant != "" })
	if tenants {
		fmt.Fprint(tw, "TENANT\t")
	}
	fmt.Fprintln(tw, "SOURCE\tACCOUNT\tDAY\tAPI\tDELIVERED\tDIFF\tSTATUS\tPENDING RECHECKS")
	for _, row := range r.Rows {
		if tenants {
			fmt.Fprintf(tw, "%s\t", row.Tenant)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%+d\t%s\t%d\n", row.Source, row.Account, row.Day, row.API, row.Delivered, row.Delivered-row.API, row.Status, row.Pending)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	pruned := ""
	if r.Pruned > 0 {
		pruned = fmt.Sprintf(", %d pruned by the sink's retention", r.Pruned)
	}
	_, err := fmt.Fprintf(w, "%d days verified with %d API requests: %d with a gap (%d records missing), %d with extra records%s\n",
		len(r.Rows), r.Requests, r.Gaps, r.Missing, r.Extra, pruned)
	return err
}

// WriteJSON prints the report as one JSON object.
func (r Report) WriteJSON(w io.Writer) error {
	rows := r.Rows
	if rows == nil {
		rows = []Row{}
	}
	r.Rows = rows
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
