package checkpoint

import (
	"encoding/binary"
	"hash/fnv"
	"testing"
)

// What the tests need to know of bbolt's file layout (go.etcd.io/bbolt
// v1.5.0, see package boltfile), read here on its own, so that the tests
// do not take boltfile's reader on trust: pages of one size; pages 0 and 1
// are meta pages, each a 16-byte page header (id, flags, count, overflow)
// then magic, version, page size, flags, root (page id, sequence),
// freelist, high-water mark, transaction id and an FNV-64a checksum of the
// meta before it.
const (
	pageHeaderSize = 16
	metaChecksumAt = pageHeaderSize + 56
	elementSize    = 16
	flagBranch     = 0x01
	flagMeta       = 0x04
	boltMagic      = 0xED0CDAED
)

var ne = binary.NativeEndian

// metaSum is the checksum of the meta of page (a meta page).
func metaSum(page []byte) uint64 {
	h := fnv.New64a()
	_, _ = h.Write(page[pageHeaderSize:metaChecksumAt])
	return h.Sum64()
}

// metaInfo is one meta page of a file.
type metaInfo struct {
	valid    bool // magic, version and checksum as bbolt wants them
	headerOK bool // the page header names the page and the meta type
	root     uint64
	freelist uint64
	hwm      uint64
	txid     uint64
}

// fileLayout is what the meta pages of a file say.
type fileLayout struct {
	pageSize int
	meta     [2]metaInfo
}

// layoutOf reads the meta pages of b, whose first meta page must give the
// page size.
func layoutOf(t testing.TB, b []byte) fileLayout {
	t.Helper()
	if len(b) < metaChecksumAt+8 {
		t.Fatalf("%d bytes hold no meta page", len(b))
	}
	return layoutAt(t, b, int(ne.Uint32(b[pageHeaderSize+8:])))
}

// layoutAt reads the meta pages of b, of pages of pageSize bytes.
func layoutAt(t testing.TB, b []byte, pageSize int) fileLayout {
	t.Helper()
	l := fileLayout{pageSize: pageSize}
	if l.pageSize < 1024 || len(b) < l.pageSize+metaChecksumAt+8 {
		t.Fatalf("page size %d for a file of %d bytes", l.pageSize, len(b))
	}
	for i := range 2 {
		p := b[i*l.pageSize:]
		m := p[pageHeaderSize:]
		l.meta[i] = metaInfo{
			valid: ne.Uint32(m[0:]) == boltMagic && ne.Uint32(m[4:]) == 2 &&
				ne.Uint64(p[metaChecksumAt:]) == metaSum(p),
			headerOK: ne.Uint64(p[0:]) == uint64(i) && ne.Uint16(p[8:]) == flagMeta,
			root:     ne.Uint64(m[16:]),
			freelist: ne.Uint64(m[32:]),
			hwm:      ne.Uint64(m[40:]),
			txid:     ne.Uint64(m[48:]),
		}
	}
	return l
}

// current returns the index of the meta bbolt uses: the valid one with the
// higher transaction id, or -1.
func (l fileLayout) current() int {
	switch m0, m1 := l.meta[0], l.meta[1]; {
	case m0.valid && m1.valid && m1.txid > m0.txid:
		return 1
	case m0.valid:
		return 0
	case m1.valid:
		return 1
	}
	return -1
}

// whole reports whether both meta pages are intact, headers included.
func (l fileLayout) whole() bool {
	return l.meta[0].valid && l.meta[0].headerOK && l.meta[1].valid && l.meta[1].headerOK
}
