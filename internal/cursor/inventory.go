package cursor

import (
	"slices"
	"time"
)

// Inventory is what a stream read as an inventory (agent_info's
// inventory: the current state of every agent, walked every
// inventory_interval) remembers of its last snapshot, so that the next
// walk delivers only the entities whose state changed. It travels in the
// Cursor, so that the checkpoint stores it with the stream's state and it
// holds exactly when the page carrying it is delivered. The zero
// Inventory knows no snapshot: the next walk delivers every entity.
type Inventory struct {
	// Taken is when the last complete walk began; zero when none
	// completed. The next walk is due an inventory_interval after it (a
	// due time that survives a restart and a change of the interval).
	Taken time.Time
	// States holds one digest per entity state of that walk (StateOf:
	// the first 64 bits of the record's C7 id, so the record, mid
	// included, whole, as a signed number), sorted ascending without
	// repeats. An entity whose
	// current digest is missing changed (or is new); an entity gone from
	// the list is pruned by the next walk, which keeps only what it saw.
	States []int64
}

// StateOf is the digest of an entity state whose record has C7 id id: the
// key Inventory.States holds (the same 64 bits the delivered set keys).
func StateOf(id string) int64 { return int64(idHash(id)) }

// Has reports whether the digest d is one of the snapshot's states.
func (i Inventory) Has(d int64) bool {
	_, ok := slices.BinarySearch(i.States, d)
	return ok
}

// IsZero reports whether i knows no snapshot.
func (i Inventory) IsZero() bool { return i.Taken.IsZero() && len(i.States) == 0 }

// Clone returns a copy of i that shares no memory with it.
func (i Inventory) Clone() Inventory {
	i.States = slices.Clone(i.States)
	return i
}

// With returns the inventory of i with the digests ds added (a walk under
// way: what it delivered so far holds with the page that carries it, so
// that a walk asked again after a crash does not deliver it again). i is
// not changed.
func (i Inventory) With(ds []int64) Inventory {
	out := Inventory{Taken: i.Taken, States: make([]int64, 0, len(i.States)+len(ds))}
	out.States = append(append(out.States, i.States...), ds...)
	slices.Sort(out.States)
	out.States = slices.Compact(out.States)
	return out
}
