package app

import (
	"errors"
	"testing"

	"github.com/svcexport/collector/internal/config"
)

// What the running process holds for its life cannot change by a reload
// (issue 33): the refusal names the key as deep as it differs; what
// changes in place (streams, their settings, failing_after) passes.
func TestRestartKeyNamesWhatNeedsARestart(t *testing.T) {
	t.Parallel()
	base := config.Default()
	for _, tc := range []struct {
		name   string
		change func(*config.Config)
		key    string
	}{
		{"buffer", func(c *config.Config) { c.Pipeline.BufferRecords++ }, "pipeline.buffer_records"},
		{"checkpoint", func(c *config.Config) { c.Checkpoint.Path += ".new" }, "checkpoint.path"},
		{"sink dir", func(c *config.Config) { c.Sink.File.Dir += "/new" }, "sink.file.dir"},
		{"listen", func(c *config.Config) { c.Metrics.Listen = "127.0.0.1:9999" }, "metrics.listen"},
		{"tap", func(c *config.Config) { c.Metrics.Tap.Enabled = true }, "metrics.tap.enabled"},
		{"log level", func(c *config.Config) { c.Log.Level = "debug" }, "log.level"},
		{"api rate", func(c *config.Config) { c.API.Rate.Limit++ }, "api.rate.limit"},
		{"accounts", func(c *config.Config) { c.Accounts = []string{"acme", "new"} }, ""},
		{"api timeout", func(c *config.Config) { c.API.Timeout++ }, ""},
		{"failing after", func(c *config.Config) { c.Metrics.FailingAfter++ }, ""},
	} {
		next := config.Default()
		tc.change(&next)
		err := restartKey(base, next)
		var ke *config.KeyError
		switch {
		case tc.key == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.key != "" && (!errors.As(err, &ke) || ke.Key != tc.key):
			t.Errorf("%s: %v, want a KeyError naming %s", tc.name, err, tc.key)
		}
	}
}
