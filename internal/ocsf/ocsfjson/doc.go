// Package ocsfjson is the raw JSON layer of package ocsf: it validates a
// record once (Value), then walks its objects and arrays in place without
// decoding them (Members, Elements), reads string contents and integers
// (AppendUnquoted, ParseInt), and appends an event to a byte slice member
// by member (Writer), tokens of the record copied as sent.
//
// It is the bottom layer: it knows JSON, not OCSF nor records, and must
// not import any package of the module (internal/archtest).
package ocsfjson
