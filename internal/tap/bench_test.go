package tap

import (
	"testing"
)

// BenchmarkPublish is what taps cost the pipeline per delivered batch
// (500 envelopes of about 300 bytes): with no tap, with four taps of
// another stream, and with four taps of the batch's stream that keep up
// (emptied after each batch, in the loop: nothing is dropped, every
// envelope is sent to all four) or sample 1%. For docs/tap.md's "Cost".
func BenchmarkPublish(b *testing.B) {
	bt := batch("dns", "acme", 500, 0, 200)
	for _, c := range []struct {
		name string
		taps int
		req  Request
	}{
		{"no tap", 0, Request{}},
		{"4 taps of another stream", 4, Request{Source: "connections"}},
		{"4 taps of the stream", 4, Request{Source: "dns"}},
		{"4 taps of the stream, sample 0.01", 4, Request{Source: "dns", Sample: 0.01}},
	} {
		b.Run(c.name, func(b *testing.B) {
			h := NewHub(Options{})
			var clients []*client
			for range c.taps {
				cl, err := h.subscribe(c.req)
				if err != nil {
					b.Fatal(err)
				}
				defer h.unsubscribe(cl)
				clients = append(clients, cl)
			}
			b.ReportAllocs()
			for b.Loop() {
				h.Publish(bt)
				for _, cl := range clients {
					for len(cl.lines) > 0 {
						<-cl.lines
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(bt.Envelopes)), "ns/envelope")
			if h.Dropped() != 0 {
				b.Fatalf("%d envelopes dropped: the figures would not be the cost of sending them all", h.Dropped())
			}
		})
	}
}
