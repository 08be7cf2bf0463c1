// Package record holds what every stage of the collector passes along: the
// envelope of one record (CONTRACT C7), batches of envelopes, the stable record
// id, the lenient parsing of record times (C3, C6), and Stream, the one name
// of a (source, account) stream in every stage. An envelope marked
// Snapshot is an inventory walk's report of an agent's current state
// (agent_info), not an event: its time is the walk's start, and its id is
// that of the state, so the same state is never sent twice. It imports no
// package of the collector.
//
// # Record id (CONTRACT C7)
//
// The id of a record of source S is the lowercase hex SHA-256 of S, one
// newline byte (0x0A) and the canonical JSON of the record as sent
// (AppendCanonical). The canonical form is RFC 8785 (JCS): whitespace
// removed, object members sorted by the UTF-16 code units of their names,
// strings with only the quote, the backslash and control characters
// escaped (short forms \b \f \n \r \t where JSON has them, else \u00xx in
// lowercase), numbers in ECMAScript's shortest form, -0 written 0. So the
// same record served twice gets the same id whatever its key order, spacing
// or escapes.
//
// Plain JCS maps distinct records to one text, and so to one id. Three
// deviations keep the id injective over everything an API can send; each
// applies only where JCS would have merged two records, so the id of every
// ordinary record is the same as under plain JCS and as before these
// deviations existed (testdata/golden_ids.txt pins ids of all nine
// sources). Ordinary: valid UTF-8, no lone surrogate escape, no repeated
// name, and every number written with no more digits than its float64
// needs, as every JSON encoder writes a float64 or an integer up to 2^53.
//
//  1. Numbers keep their exact value. JCS writes the shortest decimal that
//     reads back as the literal's float64. When that decimal's value is not
//     exactly the literal's (9007199254740993, 2^60 written in full,
//     333333333.33333329, 1e400 beyond float64, 1e-400 below it), the
//     literal's own exact value is written instead, in the same ECMAScript
//     layout: its significant digits without leading or trailing zeros, in
//     fixed notation up to 21 integer digits and down to 1e-6, else as
//     d.ddde±x (1e+400). The text written always has exactly the literal's
//     value, so distinct values get distinct texts and equal values (0.10,
//     0.1) one text.
//  2. A lone surrogate escape (\ud800 not followed by a low surrogate
//     escape, or \udc00 alone) is written as that escape, with lowercase
//     hex, instead of U+FFFD. JCS output writes a real backslash as \\, so
//     no valid string produces this text.
//  3. Every member of a repeated name is kept (no "last value wins"): a
//     stable sort orders members by name and keeps the members of one name
//     in input order, so {"x":1,"x":2}, {"x":2,"x":1} and {"x":2} differ.
//
// Strings holding bytes that are not UTF-8 are no error: the bytes are
// copied as they are into the hashed text, which valid UTF-8 never
// produces. Names holding such bytes or lone surrogates sort by their
// UTF-16 code units (a lone surrogate by its own unit, a stray byte after
// all of them) and then by their canonical text, so their order never
// depends on the input order either.
//
// A record that is not one JSON value at all (a bad escape, a control
// character in a string, truncated, data after the value, nesting deeper
// than 256) has no canonical form. ID refuses it with ErrInvalidJSON;
// Builder.Build delivers it with FlawNotJSON and the id SHA-256(S, 0x0A,
// 0xFF, the bytes as sent). No canonical text starts with the byte 0xFF, so
// such an id never equals that of a JSON record.
//
// # Records that are not ordinary
//
// Builder.Build never fails a record: a record with invalid UTF-8, no JSON,
// or a time that is missing, unreadable or outside [1970-01-01T00:00:00Z,
// 9999-12-31T23:59:59Z] is delivered with a Flaw, its time set to the
// window start, and, when what is delivered is not what was sent, the bytes
// as sent in Envelope.Original (record_base64 in the JSON encoding).
//
// It imports no other internal package: the simulator, the pollers, the
// pipeline and every sink share it, so it must stay small and dependency free.
//
// A Stream, an Envelope and a Batch carry the tenant (config tenants:);
// "" is the one-tenant form, which prints and encodes exactly as before
// tenants existed. The C7 id does not depend on the tenant: two tenants'
// identical records share an id and are kept apart by the tenant alone.
package record
