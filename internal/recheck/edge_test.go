package recheck

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

func digestOf(t testing.TB, ids ...string) record.Digest {
	t.Helper()
	var d record.Digest
	for _, s := range ids {
		sum := sha256.Sum256([]byte(s))
		if err := d.Add(hex.EncodeToString(sum[:])); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// C6: edge windows have no totalRows; a unit is fetched whole and each
// window compared by count and id digest.
func TestC6EdgeWindowsAreComparedByCountAndIDDigest(t *testing.T) {
	stored := []record.Digest{digestOf(t, "a", "b"), digestOf(t, "c"), digestOf(t, "d", "e"), digestOf(t)}
	var log []cursor.LoggedWindow
	for i, d := range stored {
		w := win(i, i+1, d.Count)
		w.Digest = d.Hex()
		log = append(log, w)
	}
	u := fixedConfig().Plan().Due(log, at(200))[0]
	if !u.Edge() || len(u.Windows) != 4 {
		t.Fatalf("unit %+v", u)
	}
	got := []record.Digest{
		digestOf(t, "a", "b"),    // as stored
		digestOf(t, "c", "late"), // grew
		digestOf(t, "d", "e-v2"), // same count, other ids (an updated alert)
		digestOf(t),              // as stored, empty
	}
	r := u.CompareEdge(got)
	if r.Requests != 1 || len(r.Keep) != 2 || len(r.Refetch) != 2 || r.Recovered != 1 || len(r.Shrunk) != 0 {
		t.Fatalf("result %+v", r)
	}
	for i, f := range r.Refetch {
		want := got[1+i]
		if !f.Counted || f.Entry.Count != want.Count || f.Entry.Digest != want.Hex() || f.Entry.Passed != at(200).Sub(f.Entry.End) {
			t.Fatalf("refetch %d: %+v", i, f)
		}
	}
	if g := r.Grown(); g != 1 {
		t.Fatalf("Grown() = %d", g)
	}
	// A window whose count fell is a shrink, delivered all the same.
	r = u.CompareEdge([]record.Digest{digestOf(t, "a"), got[1], stored[2], stored[3]})
	if len(r.Shrunk) != 1 || r.Shrunk[0].Before != 2 || r.Shrunk[0].After != 1 || r.Windows() != 4 {
		t.Fatalf("result %+v", r)
	}
}
