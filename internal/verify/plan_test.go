package verify

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

var (
	d0   = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	now  = d0.Add(10 * Day)
	dns  = record.Stream{Source: "dns", Account: "acme"}
	alrt = record.Stream{Source: "edge_alerts", Account: "acme"}
)

func h(n float64) time.Time { return d0.Add(time.Duration(n * float64(time.Hour))) }

// days renders targets as "stream day [start, end) parts".
func days(p Plan) []string {
	var out []string
	for _, t := range p.Targets {
		out = append(out, t.Stream.String()+" "+t.Day.Format("01-02")+" "+t.Start.Format("02T15")+"-"+t.End.Format("02T15"))
	}
	return out
}

func TestPlanCutsTheCommittedRangeAtUTCMidnights(t *testing.T) {
	streams := []StreamInfo{
		{Stream: dns, Start: h(5), State: checkpoint.State{Cursor: cursor.Cursor{Watermark: h(53)}}},
		{Stream: alrt, Edge: true, Start: h(30), State: checkpoint.State{Cursor: cursor.Cursor{Watermark: h(40)}}},
		{Stream: record.Stream{Source: "dns", Account: "new"}}, // nothing committed
	}
	cases := []struct {
		name      string
		f         Filter
		want      []string
		wantNotes []string
	}{
		{"from each stream's start to its watermark", Filter{},
			[]string{"dns/acme 11-20 20T05-21T00", "dns/acme 11-21 21T00-22T00", "dns/acme 11-22 22T00-22T05", "edge_alerts/acme 11-21 21T06-21T16"},
			[]string{"dns/new: no watermark committed yet"}},
		{"a source and an account", Filter{Source: "dns", Account: "acme"},
			[]string{"dns/acme 11-20 20T05-21T00", "dns/acme 11-21 21T00-22T00", "dns/acme 11-22 22T00-22T05"}, nil},
		{"from and to", Filter{From: h(30), To: h(47)},
			[]string{"dns/acme 11-21 21T06-21T23", "edge_alerts/acme 11-21 21T06-21T16"}, []string{"dns/new: no watermark"}},
		{"to never passes the watermark", Filter{Source: "edge_alerts", To: h(100)},
			[]string{"edge_alerts/acme 11-21 21T06-21T16"}, nil},
		{"a range with nothing committed", Filter{Source: "edge_alerts", From: h(45)}, nil, []string{"edge_alerts/acme: nothing committed"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPlan(streams, tc.f, Limits{Now: now})
			if got := strings.Join(days(p), "\n"); got != strings.Join(tc.want, "\n") {
				t.Fatalf("targets:\n%s\nwant:\n%s", got, strings.Join(tc.want, "\n"))
			}
			if len(p.Notes) != len(tc.wantNotes) {
				t.Fatalf("notes %q, want %q", p.Notes, tc.wantNotes)
			}
			for i, n := range tc.wantNotes {
				if !strings.Contains(p.Notes[i], n) {
					t.Fatalf("note %q does not say %q", p.Notes[i], n)
				}
			}
			if p.Requests != len(p.Targets) {
				t.Fatalf("%d requests for %d small days", p.Requests, len(p.Targets))
			}
		})
	}
}

func TestPlanStartsAtTheAPIsHistoryAndSaysWhereTheStartIsUnknown(t *testing.T) {
	p := NewPlan([]StreamInfo{{Stream: dns, Start: now.Add(-100 * Day), State: checkpoint.State{Cursor: cursor.Cursor{Watermark: now.Add(-90 * Day)}}}}, Filter{}, Limits{Now: now})
	if len(p.Targets) != 2 || !p.Targets[0].Start.After(now.Add(-92*Day)) || !strings.Contains(p.Notes[0], "reaches back") {
		t.Fatalf("targets %v, notes %q", days(p), p.Notes)
	}
	// An unknown start is said, never guessed (issue 29: a guess a day
	// before the watermark reported the time before a relative start as
	// gaps): the stream is verified only from --from.
	logged := []cursor.LoggedWindow{{Start: h(20), End: h(21), Count: 3}}
	unknown := []StreamInfo{{Stream: dns, State: checkpoint.State{Cursor: cursor.Cursor{Watermark: h(50)}}, Windows: logged}}
	p = NewPlan(unknown, Filter{}, Limits{Now: now})
	if len(p.Targets) != 0 || len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "where the stream began is unknown") || !strings.Contains(p.Notes[0], "give --from") {
		t.Fatalf("unknown start: targets %v, notes %q", days(p), p.Notes)
	}
	p = NewPlan(unknown, Filter{From: h(30)}, Limits{Now: now})
	if len(p.Targets) != 2 || !p.Targets[0].Start.Equal(h(30)) || len(p.Notes) != 0 {
		t.Fatalf("unknown start with --from: targets %v, notes %q", days(p), p.Notes)
	}
}

// C3 and C6: a day whose rows may pass what one answer holds is counted
// in parts, and the dry run says what the plan costs.
func TestPlanEstimatesRowsAndRequests(t *testing.T) {
	log := []cursor.LoggedWindow{
		{Start: h(24), End: h(36), Count: 600_000, Passed: 24 * time.Hour},
		{Start: h(36), End: h(48), Count: 10, Passed: time.Hour},
	}
	streams := []StreamInfo{
		{Stream: dns, Start: d0, State: checkpoint.State{Cursor: cursor.Cursor{Watermark: h(48), Density: 100}}, Windows: log},
		{Stream: alrt, Edge: true, Start: d0, State: checkpoint.State{Cursor: cursor.Cursor{Watermark: h(24), Density: 1000}}},
		{Stream: record.Stream{Source: "user_logins", Account: "acme"}, Start: d0, State: checkpoint.State{Cursor: cursor.Cursor{Watermark: h(24)}}},
	}
	p := NewPlan(streams, Filter{}, Limits{Now: now, RecheckLast: 24 * time.Hour})
	want := map[string]struct {
		rows           int64
		parts, pending int
	}{
		"dns/acme 11-20":         {2400, 1, 0},    // density only
		"dns/acme 11-21":         {600_010, 3, 1}, // the log: over half the 500,000 cap
		"edge_alerts/acme 11-20": {24_000, 5, 0},  // over half of max_rows 10,000
		"user_logins/acme 11-20": {-1, 1, 0},      // unknown: one request
	}
	total := 0
	for _, tg := range p.Targets {
		k := tg.Stream.String() + " " + tg.Day.Format("01-02")
		w, ok := want[k]
		if !ok || tg.EstRows != w.rows || tg.Parts != w.parts || tg.Pending != w.pending {
			t.Errorf("%s: rows %d parts %d pending %d, want %+v", k, tg.EstRows, tg.Parts, tg.Pending, w)
		}
		total += w.parts
		// The parts tile the day.
		ws := tg.Windows()
		if len(ws) != tg.Parts || !ws[0][0].Equal(tg.Start) || !ws[len(ws)-1][1].Equal(tg.End) {
			t.Errorf("%s: windows %v", k, ws)
		}
		for i := 1; i < len(ws); i++ {
			if !ws[i][0].Equal(ws[i-1][1]) {
				t.Errorf("%s: windows %v do not tile", k, ws)
			}
		}
	}
	if p.Requests != total || len(p.Targets) != len(want) {
		t.Fatalf("%d requests for %d targets, want %d", p.Requests, len(p.Targets), total)
	}
	if s := p.String(); !strings.Contains(s, "verify 4 (stream, day) of 3 streams: about 10 API requests") {
		t.Fatalf("dry run %q", s)
	}
}

type fakeDelivered map[Key]int64

func (f fakeDelivered) Delivered(context.Context, []Target) (map[Key]int64, error) { return f, nil }

func TestRunComparesEveryDayAndExitsOneOnAGap(t *testing.T) {
	p := NewPlan([]StreamInfo{{Stream: dns, Start: d0, State: checkpoint.State{Cursor: cursor.Cursor{Watermark: h(72)}}}}, Filter{}, Limits{Now: now})
	api := map[time.Time]int64{d0: 10, d0.Add(Day): 20, d0.Add(2 * Day): 30}
	counter := CounterFunc(func(_ context.Context, k record.Stream, start, end time.Time) (int64, error) {
		if k != dns || !end.Equal(start.Add(Day)) {
			t.Fatalf("asked %s [%v, %v)", k, start, end)
		}
		return api[start], nil
	})
	delivered := fakeDelivered{{dns, d0}: 10, {dns, d0.Add(Day)}: 17, {dns, d0.Add(2 * Day)}: 31}
	r, err := Run(context.Background(), p, counter, delivered)
	if err != nil {
		t.Fatal(err)
	}
	if r.Gaps != 1 || r.Extra != 1 || r.Missing != 3 || r.Requests != 3 || r.ExitCode() != 1 {
		t.Fatalf("report %+v", r)
	}
	if s := []string{r.Rows[0].Status, r.Rows[1].Status, r.Rows[2].Status}; s[0] != StatusOK || s[1] != StatusGap || s[2] != StatusExtra {
		t.Fatalf("statuses %v", s)
	}
	var table, js strings.Builder
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SOURCE", "dns     acme     2026-11-21  20   17         -3    gap", "3 days verified with 3 API requests: 1 with a gap (3 records missing), 1 with extra records"} {
		if !strings.Contains(table.String(), want) {
			t.Fatalf("table does not hold %q:\n%s", want, table.String())
		}
	}
	if err := r.WriteJSON(&js); err != nil || !strings.Contains(js.String(), `"status": "gap"`) || !strings.Contains(js.String(), `"day": "2026-11-21"`) {
		t.Fatalf("JSON %v:\n%s", err, js.String())
	}
	delivered[Key{dns, d0.Add(Day)}] = 20
	if r, _ := Run(context.Background(), p, counter, delivered); r.ExitCode() != 0 || r.Gaps != 0 {
		t.Fatalf("no gap: %+v", r)
	}
	boom := errors.New("429")
	if _, err := Run(context.Background(), p, CounterFunc(func(context.Context, record.Stream, time.Time, time.Time) (int64, error) { return 0, boom }), delivered); !errors.Is(err, boom) {
		t.Fatalf("a failed count: %v", err)
	}
}

type onceFunc func(start, end time.Time) (int64, bool)

func (f onceFunc) CountOnce(_ context.Context, _ record.Stream, start, end time.Time) (int64, bool, error) {
	n, cut := f(start, end)
	return n, cut, nil
}

// C3: a totalRows at the cap may be capped; Splitting asks the halves.
func TestC3SplittingAsksTheHalvesOfACutAnswer(t *testing.T) {
	asked := 0
	perHour := int64(100_000)
	once := onceFunc(func(start, end time.Time) (int64, bool) {
		asked++
		n := int64(end.Sub(start).Hours() * float64(perHour))
		if n >= 500_000 {
			return 500_000, true
		}
		return n, false
	})
	n, err := Splitting(once, time.Minute).Count(context.Background(), dns, d0, d0.Add(Day))
	if err != nil || n != 24*perHour {
		t.Fatalf("count %d, %v; want %d", n, err, 24*perHour)
	}
	if asked != 15 { // 1 day, 2 halves of 12h, 4 of 6h, 8 of 3h
		t.Fatalf("%d requests", asked)
	}
}

func checkStateAt(wm time.Time) checkpoint.State {
	return checkpoint.State{Cursor: cursor.Cursor{Watermark: wm}}
}

// A stream's own recheck points (sources.<name>.recheck) decide which of
// its logged windows are still pending, not another source's: a window
// last asked (Passed) before the last point has one to come.
func TestPlanCountsPendingWithTheStreamsOwnRecheckPoints(t *testing.T) {
	log := []cursor.LoggedWindow{
		{Start: h(24), End: h(30), Count: 5, Passed: time.Hour},
		{Start: h(30), End: h(36), Count: 5, Passed: 6 * time.Hour},
	}
	pending := func(last time.Duration) int {
		p := NewPlan([]StreamInfo{{Stream: dns, Start: d0, State: checkpoint.State{Cursor: cursor.Cursor{Watermark: h(48)}}, Windows: log, RecheckLast: last}},
			Filter{}, Limits{Now: now, RecheckLast: 24 * time.Hour})
		n := 0
		for _, tg := range p.Targets {
			n += tg.Pending
		}
		return n
	}
	if got := pending(6 * time.Hour); got != 1 {
		t.Errorf("points up to 6h: %d pending, want 1 (the window asked at 1h)", got)
	}
	if got := pending(0); got != 2 {
		t.Errorf("no points of its own: %d pending, want 2 (Limits.RecheckLast 24h)", got)
	}
}

// C3: a gap in a day whose windows still have a recheck to come is late
// data only if one of those windows grew at the API since it was fetched;
// when none grew, the records were missing at the fetch (a chain cut short
// of its count), and no recheck will close it.
func TestAGapTellsAWindowCutShortFromOneARecheckMayFill(t *testing.T) {
	t.Parallel()
	logged := []cursor.LoggedWindow{
		{Start: d0, End: d0.Add(12 * time.Hour), Count: 10},
		{Start: d0.Add(12 * time.Hour), End: d0.Add(Day), Count: 10},
	}
	p := NewPlan([]StreamInfo{{Stream: dns, Start: d0, State: checkpoint.State{Cursor: cursor.Cursor{Watermark: d0.Add(Day)}}, Windows: logged}}, Filter{}, Limits{Now: now, RecheckLast: 24 * time.Hour})
	for _, tc := range []struct {
		name   string
		second int64 // the API's count of the second window now
		want   string
		grown  int
	}{
		{"a window grew: late data, the gap may close", 15, CauseLate, 1},
		{"no window grew: cut short when fetched", 10, CauseCutShort, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counter := CounterFunc(func(_ context.Context, _ record.Stream, start, end time.Time) (int64, error) {
				switch {
				case start.Equal(d0) && end.Equal(d0.Add(Day)):
					return 10 + tc.second, nil
				case start.Equal(d0):
					return 10, nil
				}
				return tc.second, nil
			})
			r, err := Run(context.Background(), p, counter, fakeDelivered{{dns, d0}: 8})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Rows) != 1 || r.Rows[0].Status != StatusGap || r.Rows[0].Cause != tc.want || r.Rows[0].Grown != tc.grown || r.Requests != 3 {
				t.Fatalf("report %+v, want one gap of cause %s with %d grown in 3 requests", r, tc.want, tc.grown)
			}
		})
	}
	if r, _ := Run(context.Background(), p, CounterFunc(func(context.Context, record.Stream, time.Time, time.Time) (int64, error) { return 20, nil }),
		fakeDelivered{{dns, d0}: 20}); r.Rows[0].Cause != "" || r.Requests != 1 {
		t.Fatalf("no gap: cause %q after %d requests, want none after 1", r.Rows[0].Cause, r.Requests)
	}
}
