package ckptlog

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/checkpoint/boltfile"
)

var t0 = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)

func ms(n int) time.Time { return t0.Add(time.Duration(n)*time.Minute + 7*time.Millisecond) }

// hourWindow is the log entry of the hour i after t0.
func hourWindow(i int, count int64) Window {
	return Window{Start: t0.Add(time.Duration(i) * time.Hour), End: t0.Add(time.Duration(i+1) * time.Hour),
		Count: count, FetchedAt: t0.Add(time.Duration(i+1)*time.Hour + 30*time.Minute)}
}

// FuzzDecodeLogValues feeds arbitrary keys and values to the decoders of
// the window log and the alert marks: they never panic, and what they
// accept is what their encoders write back.
func FuzzDecodeLogValues(f *testing.F) {
	v, _ := encodeWindow(hourWindow(3, 42))
	f.Add(timeKey(hourWindow(3, 42).Start), v)
	f.Add(timeKey(t0), []byte(`{"v":1}`))
	f.Add([]byte{1, 2}, encodeAlert(AlertMark{Update: ms(1), Create: ms(0)}))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		if w, err := decodeWindow(key, value); err == nil {
			again, err := encodeWindow(w)
			if err != nil {
				t.Fatalf("an accepted window does not encode: %v", err)
			}
			if w2, err := decodeWindow(key, again); err != nil || !w2.Start.Equal(w.Start) || w2.Count != w.Count || w2.Stage != w.Stage {
				t.Fatalf("round trip of %+v: %+v, %v", w, w2, err)
			}
		} else if !errors.Is(err, boltfile.ErrCorrupt) && !errors.Is(err, boltfile.ErrUnknownVersion) {
			t.Fatalf("window error of no class: %v", err)
		}
		if u, c, err := decodeAlert(value); err == nil {
			m := AlertMark{Update: timeOfMs(u), Create: timeOfMs(c)}
			if !bytes.Equal(encodeAlert(m), value) {
				t.Fatalf("alert %x decodes to %+v, which encodes to %x", value, m, encodeAlert(m))
			}
		} else if !errors.Is(err, boltfile.ErrCorrupt) && !errors.Is(err, boltfile.ErrUnknownVersion) {
			t.Fatalf("alert error of no class: %v", err)
		}
	})
}
