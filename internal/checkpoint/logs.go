package checkpoint

import "github.com/svcexport/collector/internal/checkpoint/ckptlog"

// The window log and the alert marks are package ckptlog's: their values,
// changes, encodings and buckets. These names keep the Store's API whole.
type (
	// Window is one entry of a stream's window log (ckptlog.Window).
	Window = ckptlog.Window
	// WindowChanges change one stream's window log (ckptlog.WindowChanges).
	WindowChanges = ckptlog.WindowChanges
	// AlertMark is what an edge alert stream remembers of one alert
	// (ckptlog.AlertMark).
	AlertMark = ckptlog.AlertMark
	// AlertChanges change one stream's alert marks (ckptlog.AlertChanges).
	AlertChanges = ckptlog.AlertChanges
)
