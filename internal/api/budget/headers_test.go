package budget

import (
	"testing"
	"time"
)

func FuzzParseHeaders(f *testing.F) {
	f.Add("480", "12", "7.5")
	f.Fuzz(func(t *testing.T, l, r, s string) {
		h := map[string][]string{"Ratelimit-Limit": {l}, "Ratelimit-Remaining": {r}, "Ratelimit-Reset": {s}}
		got := ParseHeaders(h)
		if got.Remaining < 0 || got.Reset < 0 || (got.HasLimit && got.Limit <= 0) {
			t.Fatalf("got %+v", got)
		}
	})
}

func TestParseRateHeaders_C4(t *testing.T) {
	h := map[string][]string{"Ratelimit-Limit": {"480"}, "Ratelimit-Remaining": {"0"}, "Ratelimit-Reset": {"7.5"}}
	got := ParseHeaders(h)
	want := Headers{Limit: 480, Remaining: 0, Reset: 7500 * time.Millisecond, HasLimit: true, HasRemaining: true, HasReset: true}
	if got != want {
		t.Fatalf("got %+v want %+v", got, want)
	}
	if got := ParseHeaders(map[string][]string{"Ratelimit-Remaining": {"abc"}}); got.Any() {
		t.Fatalf("garbage read as %+v", got)
	}
}
