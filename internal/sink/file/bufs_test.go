package file

import (
	"context"
	"runtime"
	"testing"
)

// A page is encoded into one buffer sized for it, not grown by appending
// (each growth a copy, garbage the GC paces on), and its buffer is not
// kept once written: what the sink holds encoded follows the pages being
// written, not every page it ever wrote (issue 30, memory a pod can be
// sized for).
func TestEncodeSizesOnceAndKeepsNoPage(t *testing.T) {
	// Not parallel: AllocsPerRun counts every allocation of the process.
	s, _ := startSink(t, testConfig(t.TempDir()))
	b := batch(t, "dns", "acme", 0, 5000) // a full page, megabytes encoded
	ctx := context.Background()
	allocs := testing.AllocsPerRun(5, func() {
		p, err := s.encode(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		s.putBuf(p.buf)
	})
	// The buffer, the pending and its channel; growing by appending takes
	// tens.
	if allocs > 5 {
		t.Errorf("encoding a page of %d records took %.0f allocations; its buffer is grown, not sized once", len(b.Envelopes), allocs)
	}

	// What a write leaves live: not the page's encoding (megabytes).
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	mustWrite(t, s, b)
	runtime.GC()
	runtime.ReadMemStats(&after)
	if kept := int64(after.HeapAlloc) - int64(before.HeapAlloc); kept > maxPooled+maxPooled/2 {
		t.Errorf("a write of a page of %d records left %d bytes more live; at most %d pooled", len(b.Envelopes), kept, maxPooled)
	}
	for len(s.bufs) > 0 {
		if bp := <-s.bufs; cap(*bp) > maxPooled {
			t.Errorf("the sink keeps a buffer of %d bytes after the write, more than %d", cap(*bp), maxPooled)
		}
	}
}
