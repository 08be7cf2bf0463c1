package checkpoint

import (
	"encoding/binary"
	"time"
)

// The keys of the window log and the alert marks (package ckptlog),
// written out here again so that the tests that damage a file pin the
// layout rather than borrow it.

// alertByUUID is the first byte of an alert mark's key.
const alertByUUID = 'u'

// timeKey is t as a window log key: Unix nanoseconds, sign bit flipped,
// big-endian.
func timeKey(t time.Time) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(t.UnixNano())^(1<<63))
	return b[:]
}

func uuidKey(uuid string) []byte { return append([]byte{alertByUUID}, uuid...) }

// createdKey is an alert's index key: 'c', creation milliseconds (sign
// bit flipped, big-endian), uuid.
func createdKey(createMs int64, uuid string) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(createMs)^(1<<63))
	return append(append([]byte{'c'}, b[:]...), uuid...)
}
