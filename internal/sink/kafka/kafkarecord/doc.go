// Package kafkarecord is the Kafka record an envelope (CONTRACT C7)
// becomes, the contract with the topics' consumers: the key is the record
// id, the headers are the envelope's fields (HeaderSource ...
// HeaderContentType), the value is the envelope JSON or the raw record; and
// StandaloneSize, the size of a record alone in a record batch, which
// decides whether a record can ever fit its topic.
//
// It is pure: no I/O, no state; the Kafka sink delivers what it encodes.
package kafkarecord
