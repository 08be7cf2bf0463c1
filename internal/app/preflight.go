package app

import (
	"errors"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/config"
	"github.com/svcexport/collector/internal/record"
)

// preflight is what the machine the collector runs on says of a
// configuration before anything starts: the checkpoint at checkpoint.path
// and the sinks as their configuration builds them. Run refuses to start
// on its first failure (err); Check reports every part, so that check says
// what run will say (issue 20: check passed a checkpoint.path of
// /etc/hostname that run refused with exit 2).
type preflight struct {
	// Checkpoint is what checkpoint.Inspect found at checkpoint.path;
	// CheckpointErr is the error run would stop with (a *config.KeyError
	// naming checkpoint.path when the path is not a checkpoint).
	Checkpoint    checkpoint.Inspection
	CheckpointErr error
	// Sinks holds, per entry of Config.Sinks, the error of building that
	// sink from its configuration (nil: it builds).
	Sinks []error
}

// runPreflight checks cfg's checkpoint path and builds each of its sinks
// for streams (nothing started, nothing connected), without writing
// anything or taking a lock a running collector holds: check runs it
// beside a running collector, run before it opens the checkpoint.
func runPreflight(cfg config.Config, streams []record.Stream) preflight {
	var p preflight
	var err error
	p.Checkpoint, err = checkpoint.Inspect(cfg.Checkpoint.Path, cfg.Checkpoint.OpenTimeout)
	p.CheckpointErr = checkpointError(err)
	discard := slog.New(slog.DiscardHandler)
	for _, sc := range cfg.Sinks() {
		_, err := newSink(sc, streams, deadLetterDir(cfg), prometheus.NewRegistry(), discard, io.Discard, nil)
		p.Sinks = append(p.Sinks, err)
	}
	return p
}

// err is the first failure of p, as run stops with it; nil when every
// part passed.
func (p preflight) err() error {
	if p.CheckpointErr != nil {
		return p.CheckpointErr
	}
	for _, err := range p.Sinks {
		if err != nil {
			return err
		}
	}
	return nil
}

// configErrors are p's failures that are configuration errors (exit 2),
// joined; nil when there are none.
func (p preflight) configErrors() error {
	var out []error
	for _, err := range append([]error{p.CheckpointErr}, p.Sinks...) {
		var ke *config.KeyError
		if errors.As(err, &ke) {
			out = append(out, err)
		}
	}
	return errors.Join(out...)
}

// checkpointError is err, an error of opening or inspecting the
// checkpoint, as run reports it: a path that is not a checkpoint at all (a
// directory, a text file) is a configuration error naming checkpoint.path
// (exit 2); the rest (a damaged file, one another collector holds) are
// runtime failures whose messages say how to recover.
func checkpointError(err error) error {
	if errors.Is(err, checkpoint.ErrNotCheckpoint) {
		return &config.KeyError{Key: "checkpoint.path", Msg: err.Error()}
	}
	return err
}

// deadLetterDir is where sinks put records that can never be delivered:
// next to the checkpoint.
func deadLetterDir(cfg config.Config) string { return filepath.Dir(cfg.Checkpoint.Path) }
