package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

var alertsAcme = record.Stream{Source: "edge_alerts", Account: "acme"}

func mustAlerts(t testing.TB, d *DB, k record.Stream) map[string]cursor.AlertMark {
	t.Helper()
	m, err := d.Alerts(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func applyAlertChanges(t testing.TB, d *DB, c cursor.AlertChanges) {
	t.Helper()
	if err := d.Apply(context.Background(), Changes{Alerts: map[record.Stream]cursor.AlertChanges{alertsAcme: c}}); err != nil {
		t.Fatal(err)
	}
}

func alertsEqual(t testing.TB, got, want map[string]cursor.AlertMark) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d alert marks, want %d:\n got %v\nwant %v", len(got), len(want), got, want)
	}
	for u, w := range want {
		g, ok := got[u]
		if !ok || !g.Update.Equal(w.Update) || !g.Create.Equal(w.Create) {
			t.Fatalf("alert %q = %+v (%v), want %+v", u, g, ok, w)
		}
	}
}

// ms is t0 plus n minutes and a few milliseconds, the precision of C6.
func ms(n int) time.Time { return t0.Add(time.Duration(n)*time.Minute + 7*time.Millisecond) }

// C6: an alert's update_time survives a restart, so that a restarted
// collector emits only the alerts that changed.
func TestC6AlertMarksSurviveARestartToTheMillisecond(t *testing.T) {
	t.Parallel()
	d, path := openTemp(t)
	marks := map[string]cursor.AlertMark{
		"a": {Update: ms(5), Create: ms(1)},
		"b": {Update: ms(2).Add(999 * time.Microsecond), Create: ms(2)}, // below a ms: cut
		"c": {Create: ms(3)},                                            // never updated
	}
	applyAlertChanges(t, d, cursor.AlertChanges{Put: marks})
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	marks["b"] = cursor.AlertMark{Update: ms(2), Create: ms(2)}
	alertsEqual(t, mustAlerts(t, d, alertsAcme), marks)
	if other := mustAlerts(t, d, record.Stream{Source: "edge_alerts", Account: "globex"}); len(other) != 0 {
		t.Fatalf("another stream's marks: %v", other)
	}
}

func TestAlertMarksArePrunedByCreationAndBounded(t *testing.T) {
	t.Parallel()
	d, _ := openTemp(t, WithAlertLimit(4))
	put := map[string]cursor.AlertMark{}
	for i := range 6 {
		put[fmt.Sprintf("alert-%d", i)] = cursor.AlertMark{Update: ms(100 + i), Create: ms(10 * i)}
	}
	// Six marks over a bound of four: the two created first go.
	applyAlertChanges(t, d, cursor.AlertChanges{Put: put})
	want := map[string]cursor.AlertMark{}
	for i := 2; i < 6; i++ {
		want[fmt.Sprintf("alert-%d", i)] = put[fmt.Sprintf("alert-%d", i)]
	}
	alertsEqual(t, mustAlerts(t, d, alertsAcme), want)
	if w, a := d.Dropped(); w != 0 || a != 2 {
		t.Fatalf("Dropped() = %d, %d; want 0, 2", w, a)
	}
	// An update of alert-2 that moves its creation (it should not, but the
	// index must follow) and a prune at alert-3's creation: alert-2 now
	// counts as created late and stays, alert-3 was created exactly at the
	// cut and stays, nothing before it is left.
	applyAlertChanges(t, d, cursor.AlertChanges{
		Put:                map[string]cursor.AlertMark{"alert-2": {Update: ms(200), Create: ms(45)}},
		PruneCreatedBefore: ms(30),
	})
	want["alert-2"] = cursor.AlertMark{Update: ms(200), Create: ms(45)}
	alertsEqual(t, mustAlerts(t, d, alertsAcme), want)
	applyAlertChanges(t, d, cursor.AlertChanges{PruneCreatedBefore: ms(46)})
	alertsEqual(t, mustAlerts(t, d, alertsAcme), map[string]cursor.AlertMark{"alert-5": put["alert-5"]})
	if _, a := d.Dropped(); a != 2 {
		t.Fatalf("pruned marks counted as dropped: %d", a)
	}
	applyAlertChanges(t, d, cursor.AlertChanges{PruneCreatedBefore: ms(1000)})
	rawCheck(t, d, func(tx *bolt.Tx) {
		if tx.Bucket(bucketAlerts).Bucket(encodeKey(alertsAcme)) != nil {
			t.Fatal("a stream without marks keeps its bucket")
		}
	})
}

func TestAnAlertMarkWithoutUUIDStoresNothing(t *testing.T) {
	t.Parallel()
	d, _ := openTemp(t)
	err := d.Apply(context.Background(), Changes{
		States: map[record.Stream]State{alertsAcme: {Cursor: cursor.Cursor{Watermark: t0}}},
		Alerts: map[record.Stream]cursor.AlertChanges{alertsAcme: {Put: map[string]cursor.AlertMark{"": {Create: t0}, "a": {Create: t0}}}},
	})
	if err == nil || !strings.Contains(err.Error(), "without uuid") {
		t.Fatalf("Apply = %v", err)
	}
	if all, _ := d.All(context.Background()); len(all) != 0 {
		t.Fatalf("states stored: %v", all)
	}
	if m := mustAlerts(t, d, alertsAcme); len(m) != 0 {
		t.Fatalf("marks stored: %v", m)
	}
}

func TestAlertChangesMergeKeepsTheLaterMarkAndPrune(t *testing.T) {
	t.Parallel()
	var c cursor.AlertChanges
	c.Merge(cursor.AlertChanges{Put: map[string]cursor.AlertMark{"a": {Update: ms(1)}, "b": {Update: ms(1)}}, PruneCreatedBefore: ms(5)})
	c.Merge(cursor.AlertChanges{Put: map[string]cursor.AlertMark{"a": {Update: ms(2)}}, PruneCreatedBefore: ms(3)})
	if !c.Put["a"].Update.Equal(ms(2)) || !c.Put["b"].Update.Equal(ms(1)) || !c.PruneCreatedBefore.Equal(ms(5)) {
		t.Fatalf("merged %+v", c)
	}
}

func TestADamagedAlertMarkIsAnErrorAtOpen(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		key, value []byte
		want       error
	}{
		{"a newer version", pinnedUUIDKey("x"), append([]byte{2}, make([]byte, 16)...), ErrUnknownVersion},
		{"a short value", pinnedUUIDKey("x"), []byte{1, 0, 0}, ErrCorrupt},
		{"an unknown key", []byte("zz"), nil, ErrCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, path := openTemp(t)
			applyAlertChanges(t, d, cursor.AlertChanges{Put: map[string]cursor.AlertMark{"a": {Create: t0}}})
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			rawBolt(t, path, func(tx *bolt.Tx) error {
				b := tx.Bucket(bucketAlerts).Bucket(encodeKey(alertsAcme))
				if err := b.Put(tc.key, tc.value); err != nil {
					return err
				}
				if tc.key[0] == pinnedAlertByUUID {
					if err := b.Put(pinnedCreatedKey(0, "x"), nil); err != nil {
						return err
					}
				}
				return b.SetSequence(b.Sequence() + 1)
			})
			_, err := Open(path)
			if !errors.Is(err, tc.want) || !strings.Contains(fmt.Sprint(err), "alerts of edge_alerts/acme") {
				t.Fatalf("Open = %v, want %v naming the stream", err, tc.want)
			}
		})
	}
}
