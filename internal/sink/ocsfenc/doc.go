// Package ocsfenc is the OCSF encoder of the sinks that offer format
// "ocsf" (file, stdout, kafka): the ocsf block of their configuration
// (Config, keys sink.<sink>.ocsf.*), and an Encoder that maps each envelope
// with package ocsf and counts, per source, the values that did not fit
// their attribute's type (collector_ocsf_fallbacks_total{source}).
//
// It lives with the sinks because it is theirs: package ocsf maps a record
// and knows no sink (internal/archtest holds both rules), and this package
// gives that mapping a sink's configuration and metrics, registered with
// sinkhelper like every sink metric. It knows envelopes (package record),
// package ocsf, sinkhelper and the Prometheus registerer it is given; it
// must not import a sink (file, stdout, kafka, clickhouse), the pipeline
// or the API client. The sinks decide where the events go.
package ocsfenc
