// Package record holds what every stage of the collector passes along: the
// envelope of one record (CONTRACT C7), batches of envelopes, the stable record
// id (SHA-256 over the source name and the record's RFC 8785 canonical JSON),
// and the lenient parsing of record times (C3, C6).
//
// It imports no other internal package: the simulator, the pollers, the
// pipeline and every sink share it, so it must stay small and dependency free.
package record
