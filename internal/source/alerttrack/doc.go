// Package alerttrack remembers the edge alerts a stream has seen, by uuid,
// with the largest update_time seen (CONTRACT C6: an alert changes after
// creation), so that a re-ask of the trailing lookback emits only the
// alerts that changed. Its memory is bounded (MaxTracked).
//
// It owns that bookkeeping only: it makes no request and keeps no record,
// only ids and times; package source asks and emits.
package alerttrack
