package harness

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/record"
)

// Watermarks reads every stream's committed state from the checkpoint file
// at path, which no running collector may hold: a test reads what a stopped
// collector committed.
func Watermarks(tb testing.TB, path string) map[record.Stream]checkpoint.State {
	tb.Helper()
	db, err := checkpoint.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	all, err := db.All(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	out := make(map[record.Stream]checkpoint.State, len(all))
	for k, st := range all {
		out[k] = st // a tenant's stream keeps its tenant (TenantOnly)
	}
	return out
}

// Watermarks is Watermarks of the collector's checkpoint; it must be
// stopped.
func (c *Collector) Watermarks(tb testing.TB) map[record.Stream]checkpoint.State {
	tb.Helper()
	return Watermarks(tb, c.CheckpointPath())
}

// Day is the part [Lo, Hi) of one UTC day (Date, its midnight) that a
// comparison covers.
type Day struct{ Date, Lo, Hi time.Time }

// Days cuts [from, end) at UTC midnights; an empty span has no day.
func Days(from, end time.Time) []Day {
	if !end.After(from) {
		return nil
	}
	var out []Day
	for d := from.UTC().Truncate(24 * time.Hour); d.Before(end); d = d.Add(24 * time.Hour) {
		lo, hi := d, d.Add(24*time.Hour)
		if from.After(lo) {
			lo = from
		}
		if end.Before(hi) {
			hi = end
		}
		out = append(out, Day{Date: d, Lo: lo, Hi: hi})
	}
	return out
}

// EdgeAccount is the account of the collector's edge streams in its
// checkpoint, /state and metrics (edge.account's default): an edge source
// is one stream per edge token (C6), while each edge record's envelope
// names its own account (account_name).
const EdgeAccount = "edge"

// IsEdge reports whether source is an edge source (C6).
func IsEdge(source string) bool { return slices.Contains(EdgeSources(), source) }

// WatermarkOf returns the committed state of the envelope stream k in wms:
// its own, or for an edge source the state of the edge stream
// (source, EdgeAccount), under which the collector commits every account's
// edge records.
func WatermarkOf(wms map[record.Stream]checkpoint.State, k record.Stream) (checkpoint.State, bool) {
	if st, ok := wms[k]; ok {
		return st, true
	}
	if IsEdge(k.Source) {
		st, ok := wms[record.Stream{Source: k.Source, Account: EdgeAccount}]
		return st, ok
	}
	return checkpoint.State{}, false
}

// EnvelopeStreams expands the edge streams of streams (source, EdgeAccount),
// as the collector's checkpoint and /state name them, into one stream per
// account of sim, as the envelopes and /_truth name them; other streams
// stay as they are.
func EnvelopeStreams(sim *apisim.Server, streams []record.Stream) []record.Stream {
	var out []record.Stream
	for _, k := range streams {
		if IsEdge(k.Source) && k.Account == EdgeAccount {
			for _, a := range sim.Accounts() {
				out = append(out, record.Stream{Source: k.Source, Account: a})
			}
			continue
		}
		out = append(out, k)
	}
	return out
}

// CompareWithTruth checks, for every stream of streams and every UTC day
// of [from, watermark), that the distinct ids out holds for records of that
// day have the count and XOR the simulator's /_truth gives (C8); wms are
// the committed watermarks (Watermarks, LiveWatermarks). A stream without a
// watermark past from is an error. Edge records are compared per envelope
// account, below the watermark of their edge stream (WatermarkOf); an edge
// stream given as (source, EdgeAccount) stands for every account of sim
// (EnvelopeStreams). It returns the number of distinct records compared.
func CompareWithTruth(tb testing.TB, sim *apisim.Server, out *Output, streams []record.Stream, from time.Time, wms map[record.Stream]checkpoint.State) int64 {
	tb.Helper()
	var total int64
	for _, k := range EnvelopeStreams(sim, streams) {
		st, ok := WatermarkOf(wms, k)
		if !ok || st.Watermark.IsZero() {
			tb.Errorf("%s/%s: no watermark committed", k.Source, k.Account)
			continue
		}
		end := st.Watermark
		if !end.After(from) {
			tb.Errorf("%s/%s: watermark %v did not pass the start %v", k.Source, k.Account, end, from)
			continue
		}
		// Bucket the delivered ids of [from, end) by day.
		days := map[time.Time]*record.Digest{}
		for id := range out.IDs[k] {
			tm := out.Times[id]
			if tm.Before(from) || !tm.Before(end) {
				continue
			}
			d := tm.UTC().Truncate(24 * time.Hour)
			if days[d] == nil {
				days[d] = &record.Digest{}
			}
			if err := days[d].Add(id); err != nil {
				tb.Fatal(err)
			}
		}
		for _, d := range Days(from, end) {
			wantN, wantX := sim.Truth(k.Source, k.Account, d.Lo, d.Hi)
			got := days[d.Date]
			if got == nil {
				got = &record.Digest{}
			}
			if got.Count != wantN || got.Hex() != wantX {
				tb.Errorf("%s/%s day %s [%s, %s): delivered %d distinct records (xor %.12s), truth %d (xor %.12s)",
					k.Source, k.Account, d.Date.Format("2006-01-02"), d.Lo.Format(time.RFC3339), d.Hi.Format(time.RFC3339), got.Count, got.Hex(), wantN, wantX)
			}
			total += got.Count
		}
	}
	return total
}

// Compare is CompareWithTruth of the collector's simulator, from its
// Config.Start, against the watermarks of its (stopped) checkpoint.
func (c *Collector) Compare(tb testing.TB, out *Output, streams []record.Stream) int64 {
	tb.Helper()
	return CompareWithTruth(tb, c.cfg.Sim, out, streams, c.cfg.Start, c.Watermarks(tb))
}

// Streams are the envelope streams the collector delivers: its core
// sources (every source when Config.Sources is nil) of its accounts, and
// its edge sources of every account of its simulator (C6: the edge API has
// no account selection; each record names its own account).
func (c *Collector) Streams() []record.Stream {
	srcs := c.cfg.Sources
	if srcs == nil {
		srcs = AllSources()
	}
	var core, edge []string
	for _, s := range srcs {
		if IsEdge(s) {
			edge = append(edge, s)
		} else {
			core = append(core, s)
		}
	}
	out := append(Streams(core, c.cfg.Accounts), Streams(edge, c.cfg.Sim.Accounts())...)
	sortStreams(out)
	return out
}

// TruthRows is the number of records the simulator holds for every stream
// of the collector between Config.Start and the stream's committed
// watermark (C8), in all and per stream; a stream whose watermark did not
// pass the start fails tb. The collector must be stopped.
func (c *Collector) TruthRows(tb testing.TB) (int64, map[record.Stream]int64) {
	tb.Helper()
	wms := c.Watermarks(tb)
	per := map[record.Stream]int64{}
	var total int64
	for _, k := range c.Streams() {
		st, ok := WatermarkOf(wms, k)
		if !ok || !st.Watermark.After(c.cfg.Start) {
			tb.Fatalf("%s/%s: no watermark past the start", k.Source, k.Account)
		}
		n, _ := c.cfg.Sim.Truth(k.Source, k.Account, c.cfg.Start, st.Watermark)
		per[k] = n
		total += n
	}
	return total, per
}
