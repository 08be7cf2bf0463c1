package source

import (
	"context"

	"github.com/svcexport/collector/internal/cursor"
)

// Output is where a poller's pages go: the pipeline gives each poller one
// of its own, which keeps that stream's reservation. Run calls it from its
// goroutine only, in order: Reserve before every fetch, Emit for every page.
type Output interface {
	// Reserve blocks until there is room for a page of up to rows records
	// and holds that room for the stream's next Emit, so that a page is
	// counted against the pipeline's bound before it is fetched (DESIGN
	// item 5). It returns ctx's error when ctx ends first. Reserve of 0
	// rows gives back the room held: Run calls it before every wait (after
	// a failed fetch, and between the polls of a stream that caught up),
	// so that a stream refused for good (a revoked key of one tenant, a
	// 403), in backoff or asleep until its next poll holds no room the
	// others need.
	Reserve(ctx context.Context, rows int) error
	// Emit hands a page on, with every record fetched: the pipeline
	// leaves out what the stream delivered before. It blocks while the
	// pipeline is full and returns ctx's error when ctx ends first; any
	// error ends Run.
	Emit(ctx context.Context, p cursor.Page) error
}

// EmitFunc is an Output that hands every page to the function and reserves
// nothing: for consumers without a bound of their own (tools, tests,
// benchmarks). Nothing filters what was asked again, and the stream's
// learner hears of no page.
type EmitFunc func(ctx context.Context, p cursor.Page) error

// Reserve reserves nothing and returns nil.
func (EmitFunc) Reserve(context.Context, int) error { return nil }

// Emit calls f.
func (f EmitFunc) Emit(ctx context.Context, p cursor.Page) error { return f(ctx, p) }
