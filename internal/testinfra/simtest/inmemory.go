package simtest

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/svcexport/collector/internal/apisim"
)

// InMemoryURL is the base URL of a simulator started by StartInMemory. No
// name resolution happens: the client that StartInMemory returns dials
// every address in memory.
const InMemoryURL = "http://apisim.test"

// StartInMemory starts a simulator like Start, but served over in-memory
// connections (net.Pipe) instead of a loopback port, and returns it with
// the only http.Client that reaches it, at InMemoryURL.
//
// It exists for testing/synctest: a goroutine blocked on a socket is never
// "durably blocked", so the fake clock of a bubble stops while a keep-alive
// connection waits on loopback; on a pipe it waits on channels, which the
// bubble sees. Call it inside the bubble (synctest.Test) that runs the
// collector, so that the simulator's clock (time.Now unless mut sets Now)
// is the bubble's. The server, its connections and the client's idle
// connections are closed when tb ends.
func StartInMemory(tb testing.TB, mut func(*apisim.Config)) (*apisim.Server, *http.Client) {
	tb.Helper()
	cfg := apisim.DefaultConfig()
	if mut != nil {
		mut(&cfg)
	}
	sim, err := apisim.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ln := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	hs := &http.Server{Handler: sim.Handler()}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = hs.Serve(ln) // http.ErrServerClosed after Close
	}()
	tr := &http.Transport{DialContext: ln.dial}
	tb.Cleanup(func() {
		tr.CloseIdleConnections()
		hs.Close()
		<-served
		sim.Close()
	})
	return sim, &http.Client{Transport: tr}
}

// pipeListener hands the server one end of a net.Pipe per dial.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
	case <-ctx.Done():
	}
	client.Close()
	server.Close()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, errors.New("simtest: in-memory simulator is closed")
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "apisim.test:80" }
