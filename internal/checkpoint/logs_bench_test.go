package checkpoint

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// loaded opens a store whose dns/acme stream holds 2,000 window log
// entries and whose edge_alerts/acme stream holds 10,000 alert marks.
func loaded(b *testing.B) (*DB, string) {
	b.Helper()
	d, path := openTemp(b)
	var ws []cursor.LoggedWindow
	for i := range 2000 {
		w := hourWindow(i, int64(i))
		w.End = w.Start.Add(time.Hour)
		ws = append(ws, w)
	}
	marks := make(map[string]cursor.AlertMark, 10_000)
	for i := range 10_000 {
		marks[fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)] = cursor.AlertMark{Update: ms(i + 1), Create: ms(i)}
	}
	if err := d.Apply(context.Background(), Changes{
		Windows: map[record.Stream]cursor.WindowChanges{dnsAcme: {Put: ws}},
		Alerts:  map[record.Stream]cursor.AlertChanges{alertsAcme: {Put: marks}},
	}); err != nil {
		b.Fatal(err)
	}
	return d, path
}

// BenchmarkApplyStateWindowAndAlerts is the steady commit of a store that
// holds 2,000 window log entries and 10,000 alert marks: two states, one
// new window entry with the oldest pruned, ten alert updates and a prune
// of the alerts, in one fsynced transaction.
func BenchmarkApplyStateWindowAndAlerts(b *testing.B) {
	ctx := context.Background()
	d, _ := loaded(b)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		w := hourWindow(2000+i, 5)
		put := make(map[string]cursor.AlertMark, 10)
		for j := range 10 {
			n := (i*10 + j) % 10_000
			put[fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n)] = cursor.AlertMark{Update: ms(20_000 + i), Create: ms(n)}
		}
		if err := d.Apply(ctx, Changes{
			States:  map[record.Stream]State{dnsAcme: sampleState(), alertsAcme: sampleState()},
			Windows: map[record.Stream]cursor.WindowChanges{dnsAcme: {Put: []cursor.LoggedWindow{w}, PruneBefore: hourWindow(i, 0).End}},
			Alerts:  map[record.Stream]cursor.AlertChanges{alertsAcme: {Put: put, PruneCreatedBefore: t0}},
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}

// BenchmarkApply10kAlertMarks is the first commit of an alert stream's
// lookback: 10,000 new marks in one transaction.
func BenchmarkApply10kAlertMarks(b *testing.B) {
	ctx := context.Background()
	d, _ := openTemp(b)
	marks := make(map[string]cursor.AlertMark, 10_000)
	for i := range 10_000 {
		marks[fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)] = cursor.AlertMark{Update: ms(i + 1), Create: ms(i)}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		k := record.Stream{Source: "edge_alerts", Account: fmt.Sprint("a", i)}
		if err := d.Apply(ctx, Changes{Alerts: map[record.Stream]cursor.AlertChanges{k: {Put: marks}}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*10_000)/b.Elapsed().Seconds(), "marks/s")
}

// BenchmarkLoadLogs reads back 2,000 window entries and 10,000 alert marks,
// what a poller loads at its start.
func BenchmarkLoadLogs(b *testing.B) {
	ctx := context.Background()
	d, _ := loaded(b)
	b.ReportAllocs()
	for b.Loop() {
		if w, err := d.Windows(ctx, dnsAcme); err != nil || len(w) != 2000 {
			b.Fatal(len(w), err)
		}
		if a, err := d.Alerts(ctx, alertsAcme); err != nil || len(a) != 10_000 {
			b.Fatal(len(a), err)
		}
	}
}

// BenchmarkOpenWithLogs is Open of a file with 2,000 window entries and
// 10,000 alert marks: Open decodes every value before it returns.
func BenchmarkOpenWithLogs(b *testing.B) {
	d, path := loaded(b)
	if err := d.Close(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		d, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
