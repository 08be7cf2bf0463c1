package record

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// IDLen is the length of a record id: 64 lowercase hex digits.
const IDLen = 64

// ID returns the stable record id of CONTRACT C7: the lowercase hex SHA-256
// of the source name, one newline byte and the canonical JSON of the record
// (AppendCanonical: RFC 8785 with the deviations that keep distinct records
// apart; see the package documentation). The same record served twice gets
// the same id whatever the order of its keys or the escapes in its strings,
// and two records that differ get different ids.
//
// ID fails only when raw is not one JSON value (the error wraps
// ErrInvalidJSON); invalid UTF-8 in strings, lone surrogate escapes,
// repeated member names and numbers beyond float64 are no error. It is the
// id Builder.Build gives every record but one with FlawNotJSON, whose id
// hashes 0xFF and the bytes as sent instead (see FlawNotJSON): ID stays
// strict so that a caller checking what it hashes learns that it is no JSON.
func ID(source string, raw []byte) (string, error) {
	var h Hasher
	return h.ID(source, raw)
}

// IDOfCanonical returns the id of a record whose canonical JSON is already
// known (the simulator generates records in canonical form). It hashes
// canonical as given, without checking it.
func IDOfCanonical(source string, canonical []byte) string {
	h := sha256.New()
	h.Write([]byte(source))
	h.Write([]byte{'\n'})
	h.Write(canonical)
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0]))
}

// Hasher computes record ids and reuses its buffers between calls. The zero
// value is ready to use. A Hasher is not safe for concurrent use; give each
// goroutine its own.
type Hasher struct {
	buf []byte
	c   canon
}

// ID is like the package-level ID but reuses the Hasher's buffers.
func (h *Hasher) ID(source string, raw []byte) (string, error) {
	h.buf = append(h.buf[:0], source...)
	h.buf = append(h.buf, '\n')
	out, _, err := h.c.run(h.buf, raw, "")
	if err != nil {
		return "", fmt.Errorf("record id for %s: %w", source, err)
	}
	h.buf = out
	return sumHex(h.buf), nil
}

// sumHex returns the lowercase hex SHA-256 of b.
func sumHex(b []byte) string {
	sum := sha256.Sum256(b)
	var h [2 * sha256.Size]byte
	hex.Encode(h[:], sum[:])
	return string(h[:])
}

// XOR folds ids into a running XOR digest, as the simulator's /_truth does
// (CONTRACT C8). acc must be 32 bytes; id must be a 64-digit hex id.
func XOR(acc *[sha256.Size]byte, id string) error {
	var b [sha256.Size]byte
	if _, err := hex.Decode(b[:], []byte(id)); err != nil || len(id) != IDLen {
		return fmt.Errorf("record id %q is not 64 hex digits", id)
	}
	for i := range acc {
		acc[i] ^= b[i]
	}
	return nil
}

// Digest is an order-free summary of a set of record ids: how many and the
// XOR of them all. Two sets with equal digests are, for test purposes, the
// same set (CONTRACT C8). The zero value is the digest of the empty set.
type Digest struct {
	Count int64
	Xor   [sha256.Size]byte
}

// Add folds one id into the digest.
func (d *Digest) Add(id string) error {
	if err := XOR(&d.Xor, id); err != nil {
		return err
	}
	d.Count++
	return nil
}

// AddSum folds one id given as its raw 32 bytes.
func (d *Digest) AddSum(sum *[sha256.Size]byte) {
	for i := range d.Xor {
		d.Xor[i] ^= sum[i]
	}
	d.Count++
}

// Hex returns the XOR as 64 lowercase hex digits.
func (d *Digest) Hex() string { return hex.EncodeToString(d.Xor[:]) }
