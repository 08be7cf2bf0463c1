package checkpoint

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// The last inventory snapshot (cursor.Inventory) is stored with the
// stream's state and read back whole, 8 bytes an agent, so that a
// restarted collector delivers only the agents that changed.
func TestInventorySnapshotSurvivesAReopen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, path := openTemp(t)
	k := record.Stream{Source: "agent_info", Account: "acme"}
	taken := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	states := make([]int64, 1000)
	for i := range states {
		states[i] = int64(uint64(i)*0x9e3779b97f4a7c15 + 1)
	}
	slices.Sort(states)
	want := State{Cursor: cursor.Cursor{Watermark: taken.Add(-time.Hour), Inventory: cursor.Inventory{Taken: taken, States: states}}}
	if err := d.CommitMany(ctx, map[record.Stream]State{k: want}); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	got, ok, err := d2.Load(ctx, k)
	if err != nil || !ok {
		t.Fatalf("Load = %v, %v", ok, err)
	}
	if !got.Inventory.Taken.Equal(taken) || !slices.Equal(got.Inventory.States, states) {
		t.Fatalf("inventory = %v with %d states, want %v with %d", got.Inventory.Taken, len(got.Inventory.States), taken, len(states))
	}
	raw, err := encodeState(want)
	if err != nil {
		t.Fatal(err)
	}
	if per := float64(len(raw)) / float64(len(states)); per > 12 {
		t.Errorf("%.1f bytes an agent in the stored state, want about 11 (8 in base64)", per)
	}
}
