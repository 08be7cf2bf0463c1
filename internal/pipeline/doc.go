// Package pipeline wires the path of a record: producers (the pollers)
// reserve room and emit pages into a buffer bounded in records, sink
// workers write them, and the acknowledged pages move each stream's
// checkpoint, in order, over contiguous runs only. It is the one package
// that imports the sources, the sinks and the checkpoint; none of them
// imports it.
//
// Files: pipeline.go (Run: producers, workers, commits), output.go (each
// producer's Output: reservations and the buffer), slots.go (the buffer's
// semaphore), write.go (sink workers and retries), tracker.go (contiguous
// acknowledgements), health.go (Stalled, errors and states for /readyz,
// /healthz and /state), metrics.go, config.go.
package pipeline
