package boltfile

import (
	"errors"
	"fmt"
	"io"
)

// walk reads every page the current meta reaches (the freelist, then every
// bucket's tree) and checks what bbolt would dereference: each page id lies
// below the high-water mark, each page names itself, is of the expected
// type and is reached once, and every element, key and value lies inside
// its page. After walk, bbolt's own check (key order, every page reachable
// or free) can run without touching memory outside the file.
func (h fileHeader) walk(r io.ReaderAt, name string) error {
	m := h.meta[h.current()]
	w := &walker{r: r, name: name, pageSize: h.pageSize, hwm: m.hwm, seen: make([]bool, m.hwm)}
	w.seen[0], w.seen[1] = true, true
	if m.freelist != noFreelist {
		if err := w.freelist(m.freelist); err != nil {
			return err
		}
	}
	return w.bucketPage(m.root, "the root bucket")
}

type walker struct {
	r        io.ReaderAt
	name     string
	pageSize int64
	hwm      uint64
	seen     []bool
}

func (w *walker) damaged(format string, args ...any) error {
	return fmt.Errorf("checkpoint file %s is damaged: %s: %w", w.name, fmt.Sprintf(format, args...), ErrCorrupt)
}

// page reads page id and its overflow pages; from names the referrer.
func (w *walker) page(id uint64, from string) ([]byte, error) {
	if id < 2 || id >= w.hwm {
		return nil, w.damaged("%s refers to page %d, outside pages 2 to %d", from, id, w.hwm)
	}
	var hdr [pageHeaderSize]byte
	if _, err := w.r.ReadAt(hdr[:], int64(id)*w.pageSize); err != nil {
		return nil, fmt.Errorf("checkpoint file %s: read page %d: %w", w.name, id, err)
	}
	if got := ne.Uint64(hdr[0:]); got != id {
		return nil, w.damaged("page %d (from %s) calls itself page %d", id, from, got)
	}
	overflow := uint64(ne.Uint32(hdr[12:]))
	if overflow >= w.hwm-id {
		return nil, w.damaged("page %d (from %s) runs %d pages past the last page %d", id, from, overflow, w.hwm-1)
	}
	for i := id; i <= id+overflow; i++ {
		if w.seen[i] {
			return nil, w.damaged("page %d (from %s) is used twice", i, from)
		}
		w.seen[i] = true
	}
	b := make([]byte, int64(overflow+1)*w.pageSize)
	if _, err := w.r.ReadAt(b, int64(id)*w.pageSize); err != nil {
		return nil, fmt.Errorf("checkpoint file %s: read page %d: %w", w.name, id, err)
	}
	return b, nil
}

func (w *walker) freelist(id uint64) error {
	b, err := w.page(id, "the meta page")
	if err != nil {
		return err
	}
	if f := ne.Uint16(b[8:]); f != flagFreelist {
		return w.damaged("freelist page %d has page flags %#x", id, f)
	}
	first, n := uint64(0), uint64(ne.Uint16(b[10:]))
	if n == 0xFFFF {
		first, n = 1, ne.Uint64(b[pageHeaderSize:])
	}
	if room := uint64(len(b)-pageHeaderSize) / 8; first > room || n > room-first {
		return w.damaged("freelist page %d lists %d pages, more than it holds", id, n)
	}
	free := make(map[uint64]bool, n)
	for i := range n {
		p := ne.Uint64(b[pageHeaderSize+(first+i)*8:])
		switch {
		case p < 2 || p >= w.hwm:
			return w.damaged("freelist page %d lists page %d, outside pages 2 to %d", id, p, w.hwm)
		case free[p]:
			return w.damaged("freelist page %d lists page %d twice", id, p)
		}
		free[p] = true
	}
	return nil
}

// bucketPage walks the tree of one bucket from page id.
func (w *walker) bucketPage(id uint64, from string) error {
	b, err := w.page(id, from)
	if err != nil {
		return err
	}
	count := uint64(ne.Uint16(b[10:]))
	switch flags := ne.Uint16(b[8:]); flags {
	case flagLeaf:
		return w.leaf(b, fmt.Sprintf("leaf page %d", id))
	case flagBranch:
		if count == 0 {
			return w.damaged("branch page %d (from %s) is empty", id, from)
		}
		if err := elementsFit(b, count); err != nil {
			return w.damaged("branch page %d: %v", id, err)
		}
		for i := range count {
			e := pageHeaderSize + i*elementSize
			pos, ksize := uint64(ne.Uint32(b[e:])), uint64(ne.Uint32(b[e+4:]))
			if e+pos+ksize > uint64(len(b)) {
				return w.damaged("branch page %d: key %d lies outside the page", id, i)
			}
			if err := w.bucketPage(ne.Uint64(b[e+8:]), fmt.Sprintf("branch page %d", id)); err != nil {
				return err
			}
		}
		return nil
	default:
		return w.damaged("page %d (from %s) has page flags %#x where a branch or leaf page belongs", id, from, flags)
	}
}

// leaf checks the elements of a leaf page b (a page, or an inline bucket's
// page inside a value) and walks the sub-buckets it holds.
func (w *walker) leaf(b []byte, what string) error {
	count := uint64(ne.Uint16(b[10:]))
	if err := elementsFit(b, count); err != nil {
		return w.damaged("%s: %v", what, err)
	}
	for i := range count {
		e := pageHeaderSize + i*elementSize
		flags := ne.Uint32(b[e:])
		pos, ksize, vsize := uint64(ne.Uint32(b[e+4:])), uint64(ne.Uint32(b[e+8:])), uint64(ne.Uint32(b[e+12:]))
		end := e + pos + ksize + vsize
		if end > uint64(len(b)) {
			return w.damaged("%s: key or value %d lies outside the page", what, i)
		}
		if flags&flagBucket == 0 {
			continue
		}
		v := b[end-vsize : end]
		if len(v) < bucketHeaderSize {
			return w.damaged("%s: bucket %d has a %d-byte header", what, i, len(v))
		}
		if root := ne.Uint64(v); root != 0 {
			if err := w.bucketPage(root, what); err != nil {
				return err
			}
			continue
		}
		inline := v[bucketHeaderSize:]
		if len(inline) < pageHeaderSize || ne.Uint16(inline[8:]) != flagLeaf {
			return w.damaged("%s: inline bucket %d has no leaf page", what, i)
		}
		if err := w.leaf(inline, fmt.Sprintf("an inline bucket in %s", what)); err != nil {
			return err
		}
	}
	return nil
}

func elementsFit(b []byte, count uint64) error {
	if pageHeaderSize+count*elementSize > uint64(len(b)) {
		return errors.New("its elements overrun the page")
	}
	return nil
}
