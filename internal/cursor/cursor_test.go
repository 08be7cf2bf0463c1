package cursor

import (
	"testing"
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/window"
)

var t0 = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)

func hour(i int) LoggedWindow {
	return LoggedWindow{Start: t0.Add(time.Duration(i) * time.Hour), End: t0.Add(time.Duration(i+1) * time.Hour), Count: int64(i)}
}

func TestANilOrZeroLogChangesChangesNothing(t *testing.T) {
	var nilChanges *LogChanges
	if !nilChanges.Empty() || !(&LogChanges{}).Empty() {
		t.Fatal("a nil or zero LogChanges is not empty")
	}
	for _, c := range []LogChanges{
		{Windows: WindowChanges{Delete: []time.Time{t0}}},
		{Windows: WindowChanges{Put: []LoggedWindow{hour(0)}}},
		{Windows: WindowChanges{PruneBefore: t0}},
		{Alerts: AlertChanges{Put: map[string]AlertMark{"a": {}}}},
		{Alerts: AlertChanges{PruneCreatedBefore: t0}},
	} {
		if c.Empty() {
			t.Errorf("%+v reports empty", c)
		}
	}
}

// A later change wins: a later Put replaces an earlier one of the same
// start, a later Delete removes an earlier Put, the later prunes hold.
func TestMergeFoldsALaterChangeIntoAnEarlierOne(t *testing.T) {
	c := LogChanges{Windows: WindowChanges{Put: []LoggedWindow{hour(0), hour(1)}, PruneBefore: t0.Add(time.Hour)},
		Alerts: AlertChanges{Put: map[string]AlertMark{"a": {Update: t0}}, PruneCreatedBefore: t0.Add(2 * time.Hour)}}
	again := hour(1)
	again.Count = 42
	c.Merge(LogChanges{Windows: WindowChanges{Delete: []time.Time{hour(0).Start}, Put: []LoggedWindow{again}, PruneBefore: t0},
		Alerts: AlertChanges{Put: map[string]AlertMark{"a": {Update: t0.Add(time.Minute)}, "b": {Update: t0}}, PruneCreatedBefore: t0}})
	w := c.Windows
	if len(w.Put) != 1 || w.Put[0].Count != 42 || len(w.Delete) != 1 || !w.Delete[0].Equal(hour(0).Start) || !w.PruneBefore.Equal(t0.Add(time.Hour)) {
		t.Errorf("windows merged to %+v", w)
	}
	a := c.Alerts
	if len(a.Put) != 2 || !a.Put["a"].Update.Equal(t0.Add(time.Minute)) || !a.PruneCreatedBefore.Equal(t0.Add(2*time.Hour)) {
		t.Errorf("alerts merged to %+v", a)
	}
}

func TestAPageNamesItsStreamWindowAndIndexFromItsBatch(t *testing.T) {
	w := window.Window{Start: t0, End: t0.Add(time.Hour)}
	p := Page{Batch: record.Batch{Source: "dns", Account: "acme", WindowStart: w.Start, WindowEnd: w.End, Page: 3}}
	if p.Stream() != (record.Stream{Source: "dns", Account: "acme"}) || p.Window() != w || p.Index() != 3 {
		t.Errorf("page of %v %v %d", p.Stream(), p.Window(), p.Index())
	}
	if !(LoggedWindow{Digest: "ab"}).Edge() || hour(0).Edge() {
		t.Error("Edge does not follow the digest")
	}
}
