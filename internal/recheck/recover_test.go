package recheck

import (
	"testing"
	"time"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// logOf returns n adjacent logged windows of d each, the last ending at
// end, each holding count records.
func logOf(n int, d time.Duration, end time.Time, count int64) []cursor.LoggedWindow {
	var out []cursor.LoggedWindow
	for i := n; i > 0; i-- {
		e := end.Add(-time.Duration(i-1) * d)
		out = append(out, cursor.LoggedWindow{Start: e.Add(-d), End: e, Count: count, FetchedAt: e, Passed: 0})
	}
	return out
}

// A fresh poll re-covers the logged windows of the dense phase, back from
// the watermark without a gap, as far as they and the new window fit in a
// page; not with fixed points, or a gap at the watermark.
func TestRecoverReachesBackOverTheDensePhase(t *testing.T) {
	t.Parallel()
	c := DefaultConfig().Learnt(cursor.Delays{}, cursor.Delays{}, time.Minute) // dense 6m
	wm := t0.Add(time.Hour)
	end := wm.Add(30 * time.Second)
	log := logOf(40, 30*time.Second, wm, 10) // 20 minutes of 30 s windows
	from, ok := c.Recover(log, wm, end, 10, 5000)
	// Windows that end after end - 6m: [wm - 5m30s, wm).
	if !ok || !from.Equal(wm.Add(-5*time.Minute-30*time.Second)) {
		t.Fatalf("Recover = %v %v, want %v", from.Sub(wm), ok, -5*time.Minute-30*time.Second)
	}
	if from, ok := c.Recover(log, wm, end, 10, 100); !ok || !from.Equal(wm.Add(-4*time.Minute-30*time.Second)) {
		t.Errorf("a page of 100: %v %v, want the newest 9 windows of 10 (-4m30s)", from.Sub(wm), ok)
	}
	if _, ok := c.Recover(log, wm, end, 95, 100); ok {
		t.Error("re-covered with no window fitting in the page")
	}
	if _, ok := fixedConfig().Plan().Recover(log, wm, end, 10, 5000); ok {
		t.Error("fixed points re-covered")
	}
	if _, ok := c.Recover(log[:len(log)-1], wm, end, 10, 5000); ok {
		t.Error("re-covered with no logged window at the watermark")
	}
	gap := append(logOf(10, 30*time.Second, wm.Add(-2*time.Minute), 10), logOf(3, 30*time.Second, wm, 10)...)
	if from, ok := c.Recover(gap, wm, end, 0, 5000); !ok || !from.Equal(wm.Add(-90*time.Second)) {
		t.Errorf("over a gap: %v %v, want back to the gap (-1m30s)", from.Sub(wm), ok)
	}
	w := c.Recovered(log[len(log)-1], 12, wm.Add(time.Minute))
	if w.Count != 12 || w.Passed != time.Minute || !w.Checked().Equal(wm.Add(time.Minute)) {
		t.Errorf("Recovered: %+v", w)
	}
}

// A window a poll re-covered is not swept until a cadence after it was
// asked (its entry says it was asked), unless a later poll left it out.
func TestASweepSkipsWhatAPollReCovered(t *testing.T) {
	t.Parallel()
	c := DefaultConfig().Learnt(cursor.Delays{}, cursor.Delays{}, time.Minute)
	c.Sweep = true
	wm := t0.Add(time.Hour)
	log := logOf(10, 30*time.Second, wm, 10)
	now := wm.Add(3 * time.Minute)
	us := c.Due(log, now)
	if len(us) != 1 {
		t.Fatalf("%d units due, want the sweep", len(us))
	}
	swept := len(us[0].Windows)
	for i := range log {
		log[i] = c.Recovered(log[i], 10, now.Add(-10*time.Second))
	}
	c.Polled = now.Add(-15 * time.Second)
	if us := c.Due(log, now); len(us) != 0 {
		t.Errorf("%d units due right after a poll re-covered them", len(us))
	}
	// A later poll re-covered none of them (its page was full): asked by
	// the poll before, they are swept.
	c.Polled = now.Add(-5 * time.Second)
	if us := c.Due(log, now); len(us) != 1 || len(us[0].Windows) != swept {
		t.Errorf("%d units due after a poll that left the windows out, want the sweep of the %d of the dense phase", len(us), swept)
	}
}

// The prior fades from the first late record on (no switch at 20): one
// record found 12 minutes late moves the dense phase past 12 minutes; late
// records shorter than the prior take over as they add up.
func TestThePriorFadesFromTheFirstLateRecord(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	cad := time.Minute
	var d cursor.Delays
	ObserveLate(&d, 12*time.Minute, t0)
	if l := c.Learnt(d, cursor.Delays{}, cad); l.Dense != 15*time.Minute+cad {
		t.Errorf("one record 12 min late: dense %v, want %v", l.Dense, 15*time.Minute+cad)
	}
	var s cursor.Delays
	for range 5 {
		ObserveLate(&s, 20*time.Second, t0)
	}
	l := c.Learnt(s, cursor.Delays{}, cad)
	if l.Dense >= autoPrior+cad || l.Dense <= 30*time.Second+cad {
		t.Errorf("5 records 20 s late: dense %v, want between the record's and the prior's", l.Dense)
	}
	for range 20 {
		ObserveLate(&s, 20*time.Second, t0)
	}
	if l := c.Learnt(s, cursor.Delays{}, cad); l.Dense != 30*time.Second+cad {
		t.Errorf("25 records 20 s late: dense %v, want %v", l.Dense, 30*time.Second+cad)
	}
}

// The streams of a source learn together: a stream that saw nothing late
// takes its source's tail; one whose own delays are longer keeps its own.
func TestAPoolSharesWhatTheStreamsOfASourceLearn(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	cad := time.Minute
	var p Pool
	busy, quiet := record.Stream{Source: "dns", Account: "a"}, record.Stream{Source: "dns", Account: "b"}
	var db, dq cursor.Delays
	for range 30 {
		ObserveLate(&db, 12*time.Minute, t0)
	}
	p.Set(busy, db)
	p.Set(quiet, dq)
	if l := c.Learnt(dq, p.Sum(t0), cad); l.Dense != 15*time.Minute+cad {
		t.Errorf("quiet stream of a busy source: dense %v, want %v", l.Dense, 15*time.Minute+cad)
	}
	for range 30 {
		ObserveLate(&dq, 40*time.Minute, t0)
	}
	p.Set(quiet, dq)
	if l := c.Learnt(dq, p.Sum(t0), cad); l.Dense != 45*time.Minute+cad {
		t.Errorf("a stream later than its source: dense %v, want its own %v", l.Dense, 45*time.Minute+cad)
	}
	if sum := p.Sum(t0.Add(DelayHalfLife)); lateTotal(sum) < 29.9 || lateTotal(sum) > 30.1 {
		t.Errorf("pool after a half-life holds %v late records, want 30", lateTotal(sum))
	}
}

// A count of a range larger than RefetchRows is a count only; a smaller
// one may be the first page of its refetch.
func TestCountOnlyIsARangeLargerThanARefetch(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	if c.CountOnly(Query{Stored: c.RefetchRows}) || !c.CountOnly(Query{Stored: c.RefetchRows + 1}) {
		t.Error("CountOnly at RefetchRows")
	}
	u := Unit{Windows: logOf(4, time.Hour, t0.Add(4*time.Hour), 5000), At: t0.Add(5 * time.Hour), cfg: c}
	if q, _ := u.Narrow().Next(); q.Stored != 20000 || !c.CountOnly(q) {
		t.Errorf("unit of 20,000: %+v", q)
	}
}
