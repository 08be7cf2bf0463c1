package kafka

import (
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/svcexport/collector/internal/record"
)

// ReaderOpts are the client options that reach the cluster of cfg as the
// sink does (seeds, TLS, SASL), for a reader of what the sink produced
// (`collector verify`), and the topics the sink writes streams to. Errors
// name the sink's keys.
func ReaderOpts(cfg Config, streams []record.Stream, log *slog.Logger) ([]kgo.Opt, []string, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cn, err := prepare(cfg, log.With("sink", sinkName), nil, nil)
	if err != nil {
		return nil, nil, err
	}
	seen := map[string]bool{}
	var topics []string
	for _, st := range streams {
		if t := cn.tmpl.nameOf(st); !seen[t] {
			seen[t] = true
			topics = append(topics, t)
		}
	}
	return connOpts(cfg, cn, log), topics, nil
}
