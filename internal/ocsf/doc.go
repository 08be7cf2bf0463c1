// Package ocsf turns a record envelope (CONTRACT C7) into one event of the
// Open Cybersecurity Schema Framework, release 1.3.0, as one line of JSON,
// so that a SIEM reads every source of the platform without a hand-made
// mapping. docs/ocsf.md has the class of each source and why, the table
// of every field, and the coverage.
//
// Every event carries class_uid, category_uid, activity_id, type_uid
// (class_uid*100 + activity_id), severity_id with their captions, time
// (Unix milliseconds of the record time) and metadata: product, version
// "1.3.0", uid (the record id), original_time (the record time as sent),
// logged_time (fetched_at), log_name (the source), tenant_uid. Then the
// class's attributes, then unmapped: every member of the record that no
// attribute holds in full, as sent and in the order sent, so that nothing
// of a record is lost. raw_data (the record as a string) is optional.
//
// A snapshot envelope (an agent_info inventory walk's report of an
// agent's current state) becomes a Device Inventory Info event of
// activity Collect, with "snapshot" in metadata.labels, so that a SIEM
// tells the current inventory from the agent's creation event.
//
// Records may carry members no document names, and known members may
// change type (C3). Mapping never fails on them: a value that does not
// convert to its attribute's type goes to unmapped and is counted as a
// fallback (Append returns the count, for a metric).
//
// The types are written by hand, not taken from a Go module: none matches
// 1.3.0 and keeps unmapped data (docs/ocsf.md), and an append-style
// encoder over the raw record decodes each record once, without
// allocating.
//
// This package holds the API and writes the frame of every event (class,
// activity, severity, status, time, metadata, unmapped, raw_data); the
// work is done in layers below it, each importing only the ones under it
// (internal/archtest holds the rules):
//
//   - coremap and edgemap: the mapping of each source of the core API
//     (C3) and of the edge API (C6): its class, its known members, and
//     its two steps, what the event states first (an ocsfbase.Head) and
//     the class's attributes;
//   - ocsfbase: what the mappings share with the frame: the classes with
//     their captions, the base event's enums, Source and Head;
//   - ocsfrec: a record split once into its members, with the state of
//     its mapping (held, fallen back) and the conversions of its values
//     to OCSF's types;
//   - ocsfjson: the raw JSON scanner and the append-style writer.
//
// Only this package, its layers and the sinks may import the layers.
//
// What it must not touch: it knows package record and nothing of the
// sinks, the API client or the pipeline; the sinks call it.
package ocsf
