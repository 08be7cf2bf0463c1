package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/svcexport/collector/internal/record"
)

// CheckReport is what Check learned about the cluster, for
// "collector check". It holds no secret.
type CheckReport struct {
	// ClusterID is the cluster's id, when the brokers tell it.
	ClusterID string
	// Brokers are the brokers the cluster reports, host:port.
	Brokers []string
	// Topics has one entry per distinct topic of the streams, sorted.
	Topics []TopicReport
	// Credentials is where the SASL credentials came from, when the
	// mechanism can tell (AWS_MSK_IAM: the configuration keys, or the
	// AWS default chain's provider, such as WebIdentityCredentials);
	// empty otherwise. Never a secret.
	Credentials string
	// Warnings are settings that work but deserve a look.
	Warnings []string
}

// TopicReport is the state of one topic.
type TopicReport struct {
	Topic   string
	Streams []record.Stream
	// Exists tells whether the topic is on the cluster; when it is not,
	// WillCreate tells whether Start would create it.
	Exists     bool
	WillCreate bool
	// Partitions is the topic's partition count (0 when missing).
	Partitions int
	// MaxMessageBytes is the topic's max.message.bytes (0 when unknown).
	MaxMessageBytes int
}

// String renders the report in a few lines for a terminal.
func (r CheckReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "kafka cluster %q, brokers %s\n", r.ClusterID, strings.Join(r.Brokers, ","))
	if r.Credentials != "" {
		fmt.Fprintf(&b, "  sasl credentials: %s\n", r.Credentials)
	}
	for _, t := range r.Topics {
		switch {
		case t.Exists:
			fmt.Fprintf(&b, "  topic %s: %d partitions, max.message.bytes %d\n", t.Topic, t.Partitions, t.MaxMessageBytes)
		case t.WillCreate:
			fmt.Fprintf(&b, "  topic %s: missing, will be created at start\n", t.Topic)
		default:
			fmt.Fprintf(&b, "  topic %s: MISSING\n", t.Topic)
		}
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "  warning: %s\n", w)
	}
	return b.String()
}

// Check connects with cfg (TLS, SASL), asks the cluster for its brokers
// and for the topics of streams, and reports them without producing or
// creating anything. The error is non-nil when cfg is invalid, the cluster
// cannot be reached or refuses the credentials, or a topic is missing and
// create_topics is off; the report holds what was learned anyway.
func Check(ctx context.Context, cfg Config, streams []record.Stream) (CheckReport, error) {
	var rep CheckReport
	var mu sync.Mutex // the client's connections authenticate concurrently
	source := ""
	cn, err := prepare(cfg, slog.New(slog.DiscardHandler), nil, func(s string) {
		mu.Lock()
		source = s
		mu.Unlock()
	})
	if err != nil {
		return rep, err
	}
	rep.Warnings = warnings(cfg)
	cl, err := kgo.NewClient(connOpts(cfg, cn, slog.New(slog.DiscardHandler))...)
	if err != nil {
		return rep, fmt.Errorf("kafka check: create client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	meta, err := adm.BrokerMetadata(ctx)
	mu.Lock()
	rep.Credentials = source
	mu.Unlock()
	if err != nil {
		return rep, cn.scrub.Error(fmt.Errorf("kafka check: reach brokers %s%s: %w", strings.Join(cfg.Brokers, ","), connHint(cfg, err), err))
	}
	rep.ClusterID = meta.Cluster
	for _, b := range meta.Brokers {
		rep.Brokers = append(rep.Brokers, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
	}
	slices.Sort(rep.Brokers)

	byTopic := map[string][]record.Stream{}
	for _, st := range streams {
		t := cn.tmpl.nameOf(st)
		byTopic[t] = append(byTopic[t], st)
	}
	topics := make([]string, 0, len(byTopic))
	for t := range byTopic {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	if len(topics) == 0 {
		return rep, nil
	}
	details, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return rep, fmt.Errorf("kafka check: list topics: %w", err)
	}
	limits, limErr := topicLimits(ctx, adm, topics)
	if limErr != nil {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("cannot read max.message.bytes of the topics: %v", limErr))
	}
	var errs []error
	for _, t := range topics {
		tr := TopicReport{Topic: t, Streams: byTopic[t]}
		d, ok := details[t]
		switch {
		case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
			tr.WillCreate = cfg.CreateTopics
			if !cfg.CreateTopics {
				errs = append(errs, fmt.Errorf("kafka check: topic %q does not exist; create it or set %s.create_topics: true", t, prefix))
			}
		case d.Err != nil:
			errs = append(errs, fmt.Errorf("kafka check: topic %q: %w", t, d.Err))
		default:
			tr.Exists = true
			tr.Partitions = len(d.Partitions)
			tr.MaxMessageBytes = limits[t]
			if tr.MaxMessageBytes > 0 && tr.MaxMessageBytes < cfg.BatchMaxBytes {
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("topic %s accepts batches up to %d bytes (max.message.bytes), less than %s.batch_max_bytes %d: larger records go to the dead-letter file",
					t, tr.MaxMessageBytes, prefix, cfg.BatchMaxBytes))
			}
		}
		rep.Topics = append(rep.Topics, tr)
	}
	return rep, errors.Join(errs...)
}
