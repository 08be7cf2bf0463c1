package window_test

import (
	"fmt"
	"time"

	"github.com/svcexport/collector/internal/window"
)

// A poller's loop: plan, fetch the first page, split when the result set
// may be truncated, learn the density, move the watermark.
func ExamplePlanner() {
	p := window.Planner{MaxWindow: 7 * 24 * time.Hour, Lag: 30 * time.Minute, TargetRows: 250_000, ResultCap: 500_000, MinWindow: time.Minute}
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	watermark, _, _ := p.Start("10d", now)
	density := 0.0 // unknown: the first window is MaxWindow long

	totalRows := []int64{1_200_000, 260_000, 240_000, 90_000} // what the first pages say
	for i := 0; ; i++ {
		w, ok := p.Next(watermark, now, density)
		if !ok {
			fmt.Println("caught up; next window at", p.Ready(watermark).Format(time.RFC3339))
			break
		}
		fmt.Println("window", w, "holds", totalRows[i])
		parts, err := p.Split(w, totalRows[i])
		if err != nil {
			fmt.Println("cannot split:", err) // log loudly: rows past the cap are out of reach
		}
		if parts == nil {
			parts = []window.Window{w}
		}
		if len(parts) > 1 {
			for _, part := range parts {
				fmt.Println("  split:", part)
			}
		}
		density = window.Density(density, totalRows[i], w.Duration())
		watermark = w.End
	}
	// Output:
	// window [2026-11-12T12:00:00.000Z, 2026-11-19T12:00:00.000Z) holds 1200000
	//   split: [2026-11-12T12:00:00.000Z, 2026-11-13T21:36:00.000Z)
	//   split: [2026-11-13T21:36:00.000Z, 2026-11-15T07:12:00.000Z)
	//   split: [2026-11-15T07:12:00.000Z, 2026-11-16T16:48:00.000Z)
	//   split: [2026-11-16T16:48:00.000Z, 2026-11-18T02:24:00.000Z)
	//   split: [2026-11-18T02:24:00.000Z, 2026-11-19T12:00:00.000Z)
	// window [2026-11-19T12:00:00.000Z, 2026-11-20T23:00:00.000Z) holds 260000
	// window [2026-11-20T23:00:00.000Z, 2026-11-22T09:18:49.000Z) holds 240000
	// window [2026-11-22T09:18:49.000Z, 2026-11-22T11:30:00.000Z) holds 90000
	// caught up; next window at 2026-11-22T12:00:01Z
}
