package pipeline

import (
	"errors"
	"time"
)

// Config tunes the pipeline (key "pipeline").
type Config struct {
	// BufferRecords bounds the records between the API and the sinks: pages
	// being fetched (room is reserved before each request), buffered, and
	// being written. Memory is about this many records times their size,
	// whatever the backlog and however many streams. Default 20,000 (four
	// full pages: the API's budget, not the buffer, bounds the rate).
	BufferRecords int `koanf:"buffer_records"`
	// SinkWorkers is how many batches are written concurrently to each
	// sink (each sink has this many workers of its own). Default 4.
	SinkWorkers int `koanf:"sink_workers"`
	// SinkTimeout bounds one Write call. Default 2m.
	SinkTimeout time.Duration `koanf:"sink_timeout"`
	// RetryInitial and RetryMax bound the backoff between attempts to write
	// a batch the sink refused. A batch is retried until it is written or
	// the collector stops; it is never dropped. Defaults 500ms and 30s.
	RetryInitial time.Duration `koanf:"retry_initial"`
	RetryMax     time.Duration `koanf:"retry_max"`
	// StopTimeout is how long a stop (SIGTERM) may spend draining what was
	// fetched into the sink and committing. Pages not written by then come
	// again after the restart. Default 30s.
	StopTimeout time.Duration `koanf:"stop_timeout"`
	// StallTimeout makes /healthz fail when records have waited this long
	// without the sink acknowledging any batch while it reports ready, so
	// that an orchestrator restarts a wedged process. Default 15m.
	StallTimeout time.Duration `koanf:"stall_timeout"`
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{
		BufferRecords: 20_000,
		SinkWorkers:   4,
		SinkTimeout:   2 * time.Minute,
		RetryInitial:  500 * time.Millisecond,
		RetryMax:      30 * time.Second,
		StopTimeout:   30 * time.Second,
		StallTimeout:  15 * time.Minute,
	}
}

// Validate names the first key of each problem.
func (c Config) Validate() error {
	var errs []error
	if c.BufferRecords < 1 {
		errs = append(errs, errors.New("pipeline.buffer_records: must be at least 1"))
	}
	if c.SinkWorkers < 1 || c.SinkWorkers > 256 {
		errs = append(errs, errors.New("pipeline.sink_workers: must be between 1 and 256"))
	}
	if c.SinkTimeout <= 0 {
		errs = append(errs, errors.New("pipeline.sink_timeout: must be positive"))
	}
	if c.RetryInitial <= 0 {
		errs = append(errs, errors.New("pipeline.retry_initial: must be positive"))
	}
	if c.RetryMax < c.RetryInitial {
		errs = append(errs, errors.New("pipeline.retry_max: must be at least pipeline.retry_initial"))
	}
	if c.StopTimeout <= 0 {
		errs = append(errs, errors.New("pipeline.stop_timeout: must be positive"))
	}
	if c.StallTimeout < time.Minute {
		errs = append(errs, errors.New("pipeline.stall_timeout: must be at least 1m"))
	}
	return errors.Join(errs...)
}
