// Package access probes, for the check command, whether the configured
// credential may read each core stream (CONTRACT C1, C2, C5): one first
// page of a one-minute window per (source, account), and organization-level
// audit logs when they are on. A key without access to a sub-account or to
// organization-level data gets a 403 there, which at run time would block
// the stream (source.BlockedError); Probe reports it per stream before a
// run does.
//
// It owns only the probe. It asks through package api, reads answers with
// source/pagescan and takes the sources from source/catalog; it moves no
// data, never imports the sinks, the checkpoint or the pipeline, and
// spends one request per stream of the rate budget (C4).
package access
