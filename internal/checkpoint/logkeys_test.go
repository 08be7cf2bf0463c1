package checkpoint

import (
	"encoding/binary"
	"time"
)

// The keys of the window log and the alert marks (logwindows.go, logalerts.go),
// written out here again so that the tests that damage a file pin the
// layout rather than borrow it.

// pinnedAlertByUUID is the first byte of an alert mark's key.
const pinnedAlertByUUID = 'u'

// pinnedTimeKey is t as a window log key: Unix nanoseconds, sign bit flipped,
// big-endian.
func pinnedTimeKey(t time.Time) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(t.UnixNano())^(1<<63))
	return b[:]
}

func pinnedUUIDKey(uuid string) []byte { return append([]byte{pinnedAlertByUUID}, uuid...) }

// pinnedCreatedKey is an alert's index key: 'c', creation milliseconds (sign
// bit flipped, big-endian), uuid.
func pinnedCreatedKey(createMs int64, uuid string) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(createMs)^(1<<63))
	return append(append([]byte{'c'}, b[:]...), uuid...)
}
