package clickhouse

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/testinfra/chtest"
)

// sizedConn records the largest single Write to the server: the driver
// writes each block it sends (compressed) in one Write of its encoding
// buffer, so this is about the most it held encoded at once.
type sizedConn struct {
	net.Conn
	largest *largestWrite
}

type largestWrite struct {
	mu sync.Mutex
	n  int
}

func (c sizedConn) Write(p []byte) (int, error) {
	c.largest.mu.Lock()
	c.largest.n = max(c.largest.n, len(p))
	c.largest.mu.Unlock()
	return c.Conn.Write(p)
}

// TestALargeInsertGoesInBlocksAndARepeatIsStoredOnce: one insert of about
// 12 MiB (batch_bytes raised to hold it) reaches the server over the
// native protocol as data packets of about insertBlockBytes (256 KiB)
// each, not as one block the driver encodes whole, and its repeat under
// the same insert_deduplication_token is dropped, every block of it (C7:
// each record once). Before, the driver held each insert's columns, its
// encoding and its compressed form whole, about 3 x batch_bytes per insert
// in flight (memory round 3, issue 30).
func TestALargeInsertGoesInBlocksAndARepeatIsStoredOnce(t *testing.T) {
	t.Parallel()
	srv := chtest.Get(t)
	db := srv.NewDatabase(t)
	cfg := testConfig(srv, ProtocolNative, db)
	cfg.BatchBytes, cfg.BatchRows = 64<<20, MaxBatchRows
	s, err := New(cfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	largest := &largestWrite{}
	s.opts.DialContext = func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return sizedConn{Conn: c, largest: largest}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	w := s.writers["changed_files"]
	d := generate(t, "changed_files", 24_000, testBase)
	group := whole(w.layout.newChunk(batchOf("changed_files", "acme", d.envs, 0)))
	size := group[0].bytes()
	if size < 8*insertBlockBytes {
		t.Fatalf("the insert holds %d bytes: too small for the test", size)
	}
	token := dedupToken(w.table, group)
	dupBefore := duplicatedBlocks(t, srv)
	largest.mu.Lock()
	largest.n = 0
	largest.mu.Unlock()
	for i := range 2 {
		if err := w.send(ctx, group, token); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	n := int64(len(d.envs))
	if got := count(t, srv, db, "changed_files", ""); got != n {
		t.Fatalf("an insert in blocks sent twice with one token stored %d rows (without FINAL), want %d", got, n)
	}
	if dup := duplicatedBlocks(t, srv) - dupBefore; dup < 1 {
		t.Errorf("DuplicatedInsertedBlocks grew by %d: the repeat was not dropped by its token", dup)
	}
	largest.mu.Lock()
	got := largest.n
	largest.mu.Unlock()
	// A block's encoding is about its estimate; compressed, less. Twice
	// the block is the margin, a fifth of the insert.
	if got > 2*insertBlockBytes {
		t.Errorf("the driver wrote %d bytes at once for an insert of %d bytes: it sent the insert as one block, not blocks of about %d", got, size, insertBlockBytes)
	}
	t.Logf("insert of %d rows, %d bytes; largest write %d bytes", n, size, got)
}

func TestBlocksSplitAnInsertInOrderWithinTheirBytes(t *testing.T) {
	t.Parallel()
	// mk makes a chunk of rows of the given sizes.
	mk := func(sizes ...int) *chunk {
		c := &chunk{rows: len(sizes), cum: make([]int, len(sizes)+1)}
		for i, n := range sizes {
			c.cum[i+1] = c.cum[i] + n
		}
		return c
	}
	a := mk(30, 30, 30, 30)  // 120
	b := mk(50)              // 50
	c := mk(10, 250, 10, 10) // a row larger than a block
	group := []part{{a, 1, 4}, {b, 0, 1}, {c, 0, 4}}
	got := blocks(group, 100)
	want := [][]part{
		{{a, 1, 4}},            // 90: b's row would pass 100
		{{b, 0, 1}, {c, 0, 1}}, // 60
		{{c, 1, 2}},            // 250 alone
		{{c, 2, 4}},            // 20
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("blocks = %v, want %v", got, want)
	}
	// One block when the insert fits.
	if got := blocks(group, 1000); len(got) != 1 || !slices.Equal(got[0], group) {
		t.Fatalf("blocks within 1000 = %v, want the group whole", got)
	}
	// A part cut inside a chunk keeps its rows in order, and every row
	// goes in exactly one block.
	big := mk(slices.Repeat([]int{7}, 100)...)
	next := 0
	for _, blk := range blocks([]part{{big, 0, 100}}, 50) {
		if len(blk) != 1 || blk[0].lo != next || blk[0].bytes() > 50 {
			t.Fatalf("block %v after row %d", blk, next)
		}
		next = blk[0].hi
	}
	if next != 100 {
		t.Fatalf("the blocks end at row %d of 100", next)
	}
}
