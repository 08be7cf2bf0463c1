package boltfile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"math/bits"
	"os"
	"strings"
)

// The on-disk layout of a bbolt file (go.etcd.io/bbolt v1.5.0: internal/common
// meta.go, page.go, bucket.go; db.go), read here with explicit bounds before
// the file is handed to bbolt. bbolt maps the file and trusts what it finds:
// a page id past the end of a truncated file is a SIGBUS, which no recover
// catches. Everything below reads with ReadAt, never past the file's end.
//
// A file is a sequence of pages of one size. Every page starts with a
// header: page id (uint64), flags (uint16: branch, leaf, meta or freelist),
// element count (uint16) and the number of overflow pages that follow it
// (uint32). Pages 0 and 1 are meta pages; after the header each holds: magic
// (uint32), format version (uint32), page size (uint32), flags (uint32), the
// root bucket (root page id uint64, sequence uint64), the freelist page id
// (uint64, all ones when the freelist is not stored), the high-water mark
// (uint64: the first page id past the last page in use), the transaction id
// (uint64) and a checksum (uint64): FNV-64a of the meta bytes before it.
// bbolt writes the meta of transaction N to page N%2 after every other page
// of N is on disk, so the older meta page still describes the previous,
// intact transaction; it uses the valid meta with the higher transaction id.
//
// Branch and leaf pages hold count elements of 16 bytes after the header;
// an element's key (and a leaf's value after it) lies at the element's own
// offset plus its pos field. Branch element: pos, key size (uint32 each),
// child page id (uint64). Leaf element: flags (uint32; bit 0 marks a
// sub-bucket), pos, key size, value size (uint32 each). A sub-bucket's value
// starts with its root page id and sequence (uint64 each); root 0 means an
// inline bucket, whose leaf page follows in the value itself. A freelist
// page holds count page ids (uint64); a count of 0xFFFF means the real count
// is the first uint64. Integers are in the machine's byte order: bbolt maps
// them as Go structs.
const (
	pageHeaderSize   = 16
	metaEnd          = pageHeaderSize + 64 // header and meta
	metaChecksumAt   = pageHeaderSize + 56 // the checksummed bytes end here
	elementSize      = 16
	bucketHeaderSize = 16

	boltMagic   uint32 = 0xED0CDAED
	boltVersion uint32 = 2

	flagBranch   uint16 = 0x01
	flagLeaf     uint16 = 0x02
	flagMeta     uint16 = 0x04
	flagFreelist uint16 = 0x10
	flagBucket   uint32 = 0x01 // leaf element: the value is a sub-bucket

	noFreelist = ^uint64(0)

	// bbolt looks for the second meta page at 1 KiB << i for i up to 14 when
	// the first is unreadable; page sizes outside that range are refused.
	minPageSize = 1 << 10
	maxPageSize = 1 << 24
)

var ne = binary.NativeEndian

// metaPage is what one meta page slot holds.
type metaPage struct {
	index int   // 0 or 1
	off   int64 // where it was read
	read  bool  // the file holds all of its header and meta
	raw   [metaEnd]byte

	pageID   uint64
	pflags   uint16
	magic    uint32
	version  uint32
	pageSize uint32
	root     uint64
	freelist uint64
	hwm      uint64
	txid     uint64
	sumOK    bool
}

func readMeta(r io.ReaderAt, size int64, index int, off int64) (metaPage, error) {
	m := metaPage{index: index, off: off}
	if off+metaEnd > size {
		return m, nil
	}
	if _, err := r.ReadAt(m.raw[:], off); err != nil {
		return m, err
	}
	b := m.raw[:]
	m.read = true
	m.pageID = ne.Uint64(b[0:])
	m.pflags = ne.Uint16(b[8:])
	m.magic = ne.Uint32(b[16:])
	m.version = ne.Uint32(b[20:])
	m.pageSize = ne.Uint32(b[24:])
	m.root = ne.Uint64(b[32:])
	m.freelist = ne.Uint64(b[48:])
	m.hwm = ne.Uint64(b[56:])
	m.txid = ne.Uint64(b[64:])
	m.sumOK = ne.Uint64(b[metaChecksumAt:]) == metaSum(b)
	return m, nil
}

// metaSum is bbolt's meta checksum: FNV-64a of the meta before the checksum.
func metaSum(page []byte) uint64 {
	h := fnv.New64a()
	_, _ = h.Write(page[pageHeaderSize:metaChecksumAt])
	return h.Sum64()
}

// boltValid is bbolt's own validation of a meta (magic, version, checksum).
func (m metaPage) boltValid() bool {
	return m.read && m.magic == boltMagic && m.version == boltVersion && m.sumOK
}

// newerFormat: an intact meta of a bbolt format this collector cannot read.
func (m metaPage) newerFormat() bool {
	return m.read && m.magic == boltMagic && m.version != boltVersion && m.sumOK
}

// headerOK: the page header bbolt's consistency check asserts on.
func (m metaPage) headerOK() bool {
	return m.read && m.pageID == uint64(m.index) && m.pflags == flagMeta
}

func (m metaPage) zero() bool {
	return m.read && bytes.Count(m.raw[:], []byte{0}) == len(m.raw)
}

// problem describes what is wrong with the slot, "" if nothing.
func (m metaPage) problem() string {
	switch {
	case !m.read:
		return "missing: the file ends before it"
	case m.zero():
		return "zeroed"
	case m.magic != boltMagic:
		return "overwritten (no bbolt magic number)"
	case !m.sumOK:
		return "checksum mismatch"
	case m.version != boltVersion:
		return fmt.Sprintf("bbolt format version %d", m.version)
	case !m.headerOK():
		return fmt.Sprintf("page header damaged (id %d, flags %#x)", m.pageID, m.pflags)
	}
	return ""
}

// fileHeader is what the two meta pages of a file say.
type fileHeader struct {
	size     int64
	pageSize int64 // 0 when no meta page gives it
	head     []byte
	meta     [2]metaPage
}

// readHeader reads the meta pages of a file of size bytes. It fails only
// when reading fails; what the pages say is judged by check.
func readHeader(r io.ReaderAt, size int64) (fileHeader, error) {
	h := fileHeader{size: size}
	h.head = make([]byte, min(size, metaEnd))
	if _, err := r.ReadAt(h.head, 0); err != nil {
		return h, err
	}
	m0, err := readMeta(r, size, 0, 0)
	if err != nil {
		return h, err
	}
	h.meta[0] = m0
	if m0.boltValid() || m0.newerFormat() {
		h.pageSize = int64(m0.pageSize)
		if pageSizeOK(h.pageSize) {
			h.meta[1], err = readMeta(r, size, 1, h.pageSize)
		}
		return h, err
	}
	// Like bbolt: the first meta page cannot give the page size, so look for
	// the second at every page size bbolt supports. A candidate counts only
	// if it is intact and names its own offset as the page size.
	for off := int64(minPageSize); off <= maxPageSize && off+metaEnd <= size; off <<= 1 {
		m, err := readMeta(r, size, 1, off)
		if err != nil {
			return h, err
		}
		if m.magic == boltMagic && m.sumOK && int64(m.pageSize) == off {
			h.meta[1], h.pageSize = m, off
			return h, nil
		}
	}
	// Nothing intact: describe the second slot where this machine's page
	// size puts it (bbolt creates files with that size).
	h.meta[1], err = readMeta(r, size, 1, int64(os.Getpagesize()))
	return h, err
}

func pageSizeOK(p int64) bool {
	return p >= minPageSize && p <= maxPageSize && bits.OnesCount64(uint64(p)) == 1
}

// current returns the index of the meta bbolt uses: the valid one with the
// higher transaction id (the first on a tie), or -1.
func (h fileHeader) current() int {
	m0, m1 := h.meta[0], h.meta[1]
	switch {
	case m0.boltValid() && m1.boltValid():
		if m1.txid > m0.txid {
			return 1
		}
		return 0
	case m0.boltValid():
		return 0
	case m1.boltValid():
		return 1
	}
	return -1
}

// check judges the header: nil when the file can be handed to the walk and
// then to bbolt. name is the file's name in messages.
func (h fileHeader) check(name string) error {
	if h.size == 0 {
		return fmt.Errorf("checkpoint file %s is empty (0 bytes): it was damaged, or created by a crash before its first write: %w", name, ErrCorrupt)
	}
	for _, m := range h.meta {
		if m.newerFormat() {
			return fmt.Errorf("checkpoint file %s was written in bbolt format version %d (meta page %d); this collector reads version %d: %w", name, m.version, m.index, boltVersion, ErrUnknownVersion)
		}
	}
	c := h.current()
	if c < 0 {
		return h.noMeta(name)
	}
	m := h.meta[c]
	p := int64(m.pageSize)
	switch {
	case !pageSizeOK(p):
		return fmt.Errorf("checkpoint file %s has an unsupported page size (%d bytes): %w", name, p, ErrCorrupt)
	case h.meta[1-c].boltValid() && int64(h.meta[1-c].pageSize) != p:
		return fmt.Errorf("checkpoint file %s has meta pages that disagree on the page size (%d and %d bytes): %w", name, m.pageSize, h.meta[1-c].pageSize, ErrCorrupt)
	case h.size%p != 0:
		return fmt.Errorf("checkpoint file %s is truncated: its %d bytes are not a whole number of %d-byte pages: %w", name, h.size, p, ErrCorrupt)
	case m.hwm > uint64(h.size/p):
		return fmt.Errorf("checkpoint file %s is truncated: it has %d bytes, but its transaction %d uses %d pages of %d bytes (%d bytes): %w",
			name, h.size, m.txid, m.hwm, p, mulSat(m.hwm, uint64(p)), ErrCorrupt)
	case m.root < 2 || m.root >= m.hwm:
		return fmt.Errorf("checkpoint file %s is damaged: its root page %d lies outside pages 2 to %d: %w", name, m.root, m.hwm, ErrCorrupt)
	case m.freelist != noFreelist && (m.freelist < 2 || m.freelist >= m.hwm):
		return fmt.Errorf("checkpoint file %s is damaged: its freelist page %d lies outside pages 2 to %d: %w", name, m.freelist, m.hwm, ErrCorrupt)
	}
	return nil
}

func mulSat(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 {
		return ^uint64(0)
	}
	return lo
}

// noMeta explains a file without a usable meta page: a damaged checkpoint,
// or something that never was one.
func (h fileHeader) noMeta(name string) error {
	m0, m1 := h.meta[0], h.meta[1]
	if m0.magic == boltMagic || m1.magic == boltMagic {
		return fmt.Errorf("checkpoint file %s is damaged: both meta pages are unusable (meta page 0: %s; meta page 1: %s): %w", name, m0.problem(), m1.problem(), ErrCorrupt)
	}
	prefix := metaPagePrefix()
	if n := min(len(h.head), len(prefix)); h.size < metaEnd && bytes.Equal(h.head[:n], prefix[:n]) {
		return fmt.Errorf("checkpoint file %s is truncated to %d byte(s): %w", name, h.size, ErrCorrupt)
	}
	if bytes.Count(h.head, []byte{0}) == len(h.head) && (!m1.read || m1.zero()) {
		return fmt.Errorf("checkpoint file %s is damaged: it is zeroed where its meta pages belong: %w", name, ErrCorrupt)
	}
	// None of its bytes is shown: a path set to the wrong file may name a
	// token or a key file (issue 29).
	return fmt.Errorf("checkpoint file %s is not a checkpoint: it is not a bbolt file (%d bytes; its content is not shown): %w", name, h.size, ErrNotCheckpoint)
}

// metaPagePrefix is how every meta page 0 bbolt writes begins: its header
// and the magic number.
func metaPagePrefix() []byte {
	b := make([]byte, pageHeaderSize+4)
	ne.PutUint16(b[8:], flagMeta)
	ne.PutUint32(b[pageHeaderSize:], boltMagic)
	return b
}

// Damage describes what is wrong with the meta pages of a file that Verify
// accepted, and which pages Repair rewrites. A damaged meta page is one
// bbolt ignores (bad magic, version or checksum); a damaged page header is
// one bbolt reads past, but its consistency check asserts on.
type Damage struct {
	cur     int      // the meta bbolt uses
	txid    uint64   // its transaction
	lost    bool     // the other meta is unreadable: it may have been newer
	reasons []string // what is wrong, one per page
	// fixes are the meta pages to rewrite before bbolt's check can run;
	// empty when bbolt copes alone (the next commit rewrites the page).
	fixes []pageFix
}

type pageFix struct {
	index int    // the page rewritten
	from  int    // the meta page it was rewritten from
	page  []byte // the whole page
}

// damage returns nil when both meta pages are intact. Only for a header
// that passed check: one meta page, at least, is valid.
func (h fileHeader) damage() *Damage {
	c := h.current()
	cur, other := h.meta[c], h.meta[1-c]
	if cur.headerOK() && other.boltValid() && other.headerOK() {
		return nil
	}
	d := &Damage{cur: c, txid: cur.txid}
	if !cur.headerOK() {
		d.reasons = append(d.reasons, fmt.Sprintf("meta page %d: %s", c, cur.problem()))
		d.fixes = append(d.fixes, pageFix{c, c, buildMetaPage(h.pageSize, c, cur.raw[:], cur.txid)})
	}
	if other.boltValid() && other.headerOK() {
		return d
	}
	d.reasons = append(d.reasons, fmt.Sprintf("meta page %d: %s", 1-c, other.problem()))
	d.lost = !other.boltValid()
	if !other.headerOK() || len(d.fixes) > 0 {
		if other.boltValid() {
			d.fixes = append(d.fixes, pageFix{1 - c, 1 - c, buildMetaPage(h.pageSize, 1-c, other.raw[:], other.txid)})
		} else {
			// The rewritten page describes the same tree as the current one
			// under the previous transaction id (bbolt writes transaction N
			// to page N%2), so bbolt keeps using the current meta, and the
			// next commit overwrites the rewritten one.
			txid := cur.txid - 1
			if cur.txid == 0 {
				txid = 1
			}
			d.fixes = append(d.fixes, pageFix{1 - c, c, buildMetaPage(h.pageSize, 1-c, cur.raw[:], txid)})
		}
	}
	return d
}

// buildMetaPage returns meta page index of pageSize bytes holding the meta
// of src (a meta page's first metaEnd bytes) with transaction txid.
func buildMetaPage(pageSize int64, index int, src []byte, txid uint64) []byte {
	b := make([]byte, pageSize)
	ne.PutUint64(b[0:], uint64(index))
	ne.PutUint16(b[8:], flagMeta)
	copy(b[pageHeaderSize:metaChecksumAt], src[pageHeaderSize:metaChecksumAt])
	ne.PutUint64(b[64:], txid)
	ne.PutUint64(b[metaChecksumAt:], metaSum(b))
	return b
}

// NeedsRepair reports whether bbolt's check cannot run before Repair
// rewrites meta pages; otherwise bbolt copes, and its next commit rewrites
// the damaged page.
func (d *Damage) NeedsRepair() bool { return d != nil && len(d.fixes) > 0 }

// Reasons says what is wrong, one entry per damaged meta page.
func (d *Damage) Reasons() []string { return d.reasons }

// Describe says what was damaged and what was done about it, for the
// caller's warning; backup is the saved copy when Repair repaired the
// file, "" when it did not.
func (d *Damage) Describe(path, backup string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "checkpoint file %s was damaged (%s); opened from meta page %d (transaction %d)", path, strings.Join(d.reasons, "; "), d.cur, d.txid)
	if d.lost {
		b.WriteString(": at worst its last commit was lost, and the pages that commit covered are fetched again")
	} else {
		b.WriteString(": nothing was lost")
	}
	if backup == "" {
		fmt.Fprintf(&b, "; bbolt rewrites meta page %d at the next commit", 1-d.cur)
		return b.String()
	}
	fmt.Fprintf(&b, "; the damaged file was saved as %s", backup)
	for _, fx := range d.fixes {
		if fx.from == fx.index {
			fmt.Fprintf(&b, ", the header of meta page %d was rewritten", fx.index)
		} else {
			fmt.Fprintf(&b, ", meta page %d was rewritten from meta page %d", fx.index, fx.from)
		}
	}
	return b.String()
}
