// Package kafkaharness extends the harness to the Kafka sink: it starts the
// project's standalone broker (cmd/kafkabroker, franz-go's kfake) as a
// process of its own, and reads topics back with Debian's kcat
// (librdkafka), a consumer of another client family than the producer under
// test, checking every record against the sink's documented format. Like
// the harness it is imported by _test.go files only.
package kafkaharness
