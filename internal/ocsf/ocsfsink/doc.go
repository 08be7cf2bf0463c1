// Package ocsfsink is what the sinks that offer format "ocsf" (file,
// stdout, kafka) share: the ocsf block of their configuration (Config,
// keys sink.<sink>.ocsf.*), and an Encoder that maps each envelope with
// package ocsf and counts, per source, the values that did not fit their
// attribute's type (collector_ocsf_fallbacks_total{source}).
//
// It knows envelopes (package record), package ocsf and the Prometheus
// registerer it is given; it must not import a sink, the pipeline or the
// API client. The sinks decide where the events go.
package ocsfsink
