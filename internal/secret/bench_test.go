package secret

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkScrub scrubs a 4 KiB error body with escapes in it (the slow
// path: every layer undone) against ten secrets, one of them a 1 KiB
// session token.
func BenchmarkScrub(b *testing.B) {
	s := NewScrubber(New(strings.Repeat("session-token/", 73)))
	for i := range 9 {
		s.AddBasic(fmt.Sprintf("client-%d", i), New(fmt.Sprintf("s3cr3t+%d/with&chars", i)))
	}
	text := strings.Repeat(`{"message":"bad request a%2Bb &amp; \u0026 x"} `, 4096/48)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		_ = s.Scrub(text)
	}
}

// BenchmarkScrubLogLine scrubs a short log line without escapes (the fast
// path: the text as it is only) against the same secrets.
func BenchmarkScrubLogLine(b *testing.B) {
	s := NewScrubber(New(strings.Repeat("session-token/", 73)))
	for i := range 9 {
		s.AddBasic(fmt.Sprintf("client-%d", i), New(fmt.Sprintf("s3cr3t+%d/with&chars", i)))
	}
	text := "kafka client: connection opened to broker addr=127.0.0.1:9092 broker=1"
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		_ = s.Scrub(text)
	}
}
