package sinkhelper

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Named returns the Registerer through which the application builds the
// sink it configured under name ("siem"), so that two sinks of one type
// never share a series, a label value or a dead-letter file, without each
// sink's constructor taking the name:
//
//   - New called with it labels the shared families with sink=name
//     instead of the type's name it is given, prefixes its errors with
//     name, and names its dead-letter file after name (DeadLetterFileOf);
//   - a family the sink registers through it with reg.Register (its own
//     metrics: collector_kafka_*, collector_clickhouse_*) gets the constant
//     label sink=name;
//   - a family registered through Register (this package's) goes to the
//     Registerer underneath unchanged: it carries a variable sink label
//     already, whose value NameOf gives.
//
// A nil reg keeps the name and registers nothing.
func Named(reg prometheus.Registerer, name string) prometheus.Registerer {
	n := &named{base: reg, name: name}
	if reg != nil {
		n.wrapped = prometheus.WrapRegistererWith(prometheus.Labels{"sink": name}, reg)
	}
	return n
}

// NameOf returns the name Named gave reg, or def (the sink type's own
// name) for any other Registerer.
func NameOf(reg prometheus.Registerer, def string) string {
	if n, ok := reg.(*named); ok && n.name != "" {
		return n.name
	}
	return def
}

// DeadLetterFileOf is the name of the dead-letter file of the sink named
// name whose type is typeName: DeadLetterFile for a sink named after its
// type (the one-sink configuration), dead-letters-NAME.ndjson otherwise.
// Sink names are unique, so are the files.
func DeadLetterFileOf(name, typeName string) string {
	if name == "" || name == typeName {
		return DeadLetterFile
	}
	return "dead-letters-" + name + ".ndjson"
}

// named is the Registerer of Named.
type named struct {
	base    prometheus.Registerer // nil: register nothing
	wrapped prometheus.Registerer // base with the constant label sink=name
	name    string
}

func (n *named) Register(c prometheus.Collector) error {
	if n.wrapped == nil {
		return nil
	}
	return n.wrapped.Register(c)
}

func (n *named) MustRegister(cs ...prometheus.Collector) {
	if n.wrapped != nil {
		n.wrapped.MustRegister(cs...)
	}
}

func (n *named) Unregister(c prometheus.Collector) bool {
	return n.wrapped != nil && n.wrapped.Unregister(c)
}

// unwrap returns the Registerer under a Named one, and reg otherwise.
func unwrap(reg prometheus.Registerer) prometheus.Registerer {
	if n, ok := reg.(*named); ok {
		return n.base
	}
	return reg
}
