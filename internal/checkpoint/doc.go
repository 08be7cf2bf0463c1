// Package checkpoint persists the progress of every (source, account) stream
// in a bbolt file: the watermark (end of the last window whose every record
// was acknowledged) and the window in flight. It knows neither the API nor
// the sinks; the pipeline commits a State only after the pages it covers were
// acknowledged, in order.
//
// Store is the interface the pipeline consumes; DB (Open) implements it on a
// bbolt file, and package checkpointtest holds an in-memory fake for tests.
// Stored values are versioned JSON: a file or value this version cannot
// read is an error naming the file and key, never a silent reset.
package checkpoint
