package harness

import (
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
)

// FreeAddr returns a loopback address (host:port) with a port nobody
// listens on now.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// LowFreePort returns a loopback port below Linux's ephemeral range
// (32768-60999) that nobody listens on now. A server that is restarted on
// its port needs one: while it is down, its clients dial the port again and
// again, and a dial from an ephemeral port can, rarely, connect to itself
// (TCP simultaneous open) and hold the port. Nothing else of the harness
// binds such a port, so tests that use one may run in parallel.
func LowFreePort(tb testing.TB) int {
	tb.Helper()
	for range 100 {
		port := 20000 + rand.IntN(12000)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			l.Close()
			return port
		}
	}
	tb.Fatal("no free port in 20000-31999")
	return 0
}
