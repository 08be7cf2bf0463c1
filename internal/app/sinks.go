package app

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/config"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/clickhouse"
	"github.com/svcexport/collector/internal/sink/file"
	"github.com/svcexport/collector/internal/sink/kafka"
	"github.com/svcexport/collector/internal/sink/stdout"
)

// newSink builds the sink sink.type names. deadLetterDir is where sinks put
// records that can never be delivered (next to the checkpoint).
func newSink(cfg config.Config, streams []record.Stream, deadLetterDir string, reg prometheus.Registerer, log *slog.Logger, out io.Writer) (sink.Sink, error) {
	switch cfg.Sink.Type {
	case config.SinkFile:
		return file.New(cfg.Sink.File, reg, log)
	case config.SinkStdout:
		return stdout.New(cfg.Sink.Stdout, out, reg)
	case config.SinkKafka:
		return kafka.New(cfg.Sink.Kafka, streams, deadLetterDir, reg, log)
	case config.SinkClickHouse:
		return clickhouse.New(cfg.Sink.ClickHouse, reg, log)
	}
	return nil, fmt.Errorf("sink.type: unknown sink %q", cfg.Sink.Type)
}
