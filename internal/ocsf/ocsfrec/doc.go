// Package ocsfrec is one record as package ocsf's mappings read it: split
// once into its top-level members (Record.Scan), its known members found
// by index, with the state of the mapping (which members an attribute
// holds in full, which fell back to unmapped, how many fallbacks), and
// the conversions of values to OCSF 1.3.0's types: string_t, integers,
// timestamp_t (as record.ParseTime reads times), ip_t, hostname_t,
// email_t, and identifiers carried as string_t.
//
// It imports package record and ocsfjson only: no OCSF class, no source's
// mapping, nothing of the layers above it (internal/archtest).
package ocsfrec
