// Package kafkarecord is the Kafka record an envelope (CONTRACT C7)
// becomes, the contract with the topics' consumers: the key is the record
// id, the headers are the envelope's fields (HeaderSource ...
// HeaderContentType), the value is the envelope JSON, the raw record or
// the record's OCSF 1.3.0 event (content-type ContentTypeOCSF); and
// StandaloneSize, the size of a record alone in a record batch, which
// decides whether a record can ever fit its topic.
//
// It is pure: no I/O, no state of its own (the OCSF mapper it is given
// counts fallbacks); the Kafka sink produces what it encodes.
package kafkarecord
