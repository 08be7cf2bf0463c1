package checkpoint

import (
	"bytes"
	"errors"
	"testing"

	"github.com/svcexport/collector/internal/cursor"
)

// FuzzDecodeLogValues feeds arbitrary keys and values to the decoders of
// the window log and the alert marks: they never panic, and what they
// accept is what their encoders write back.
func FuzzDecodeLogValues(f *testing.F) {
	v, _ := encodeWindow(hourWindow(3, 42))
	f.Add(timeKey(hourWindow(3, 42).Start), v)
	f.Add(timeKey(t0), []byte(`{"v":1}`))
	f.Add(timeKey(t0), []byte(`{"v":1,"start":"2026-11-20T00:00:00Z","end":"2026-11-20T01:00:00Z","count":3,"fetched_at":"2026-11-20T01:30:00Z","stage":1}`))
	f.Add([]byte{1, 2}, encodeAlert(cursor.AlertMark{Update: ms(1), Create: ms(0)}))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		if w, err := decodeWindow(key, value); err == nil {
			again, err := encodeWindow(w)
			if err != nil {
				t.Fatalf("an accepted window does not encode: %v", err)
			}
			if w2, err := decodeWindow(key, again); err != nil || !w2.Start.Equal(w.Start) || w2.Count != w.Count || w2.Passed != w.Passed {
				t.Fatalf("round trip of %+v: %+v, %v", w, w2, err)
			}
		} else if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnknownVersion) {
			t.Fatalf("window error of no class: %v", err)
		}
		if u, c, err := decodeAlert(value); err == nil {
			m := cursor.AlertMark{Update: timeOfMs(u), Create: timeOfMs(c)}
			if !bytes.Equal(encodeAlert(m), value) {
				t.Fatalf("alert %x decodes to %+v, which encodes to %x", value, m, encodeAlert(m))
			}
		} else if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnknownVersion) {
			t.Fatalf("alert error of no class: %v", err)
		}
	})
}
