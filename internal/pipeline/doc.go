// Package pipeline wires the path of a record: pollers emit pages into a
// channel bounded in records, sink workers write them, and the acknowledged
// pages move each stream's checkpoint, in order, over contiguous runs only.
// It is the one package that imports the sources, the sinks and the
// checkpoint; none of them imports it.
package pipeline
