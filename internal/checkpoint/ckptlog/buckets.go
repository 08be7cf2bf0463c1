package ckptlog

import "time"

// Names of the top-level buckets this package owns; under each, one
// bucket per stream, named by the caller's key of the stream. The names
// are part of the file format: never change them.
const (
	WindowsBucket = "windows"
	AlertsBucket  = "alerts"
)

var (
	bucketWindows = []byte(WindowsBucket)
	bucketAlerts  = []byte(AlertsBucket)
)

// utc drops the location and the monotonic reading; the zero time stays zero.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}
