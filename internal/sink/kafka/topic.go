package kafka

import (
	"github.com/svcexport/collector/internal/record"

	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// errTopicMissing is in the error of a topic that does not exist while
// create_topics is off: the sink may not create it, so it is permanent.
var errTopicMissing = errors.New("does not exist")

// maxTopicLen is the longest topic name Kafka accepts.
const maxTopicLen = 249

// topicTemplate is a parsed Config.Topic: literal text and placeholders.
type topicTemplate struct {
	parts []topicPart
}

type topicPart struct {
	literal string
	field   string // "tenant", "source" or "account" when a placeholder
}

// parseTopicTemplate checks a template: braces balanced, only the {source}
// and {account} placeholders, and literal text made of characters a topic
// name may hold.
func parseTopicTemplate(s string) (topicTemplate, error) {
	if s == "" {
		return topicTemplate{}, errors.New("must not be empty")
	}
	var t topicTemplate
	rest := s
	for rest != "" {
		i := strings.IndexAny(rest, "{}")
		if i < 0 {
			t.parts = append(t.parts, topicPart{literal: rest})
			break
		}
		if i > 0 {
			t.parts = append(t.parts, topicPart{literal: rest[:i]})
		}
		if rest[i] == '}' {
			return topicTemplate{}, fmt.Errorf("%q has a '}' without '{'", s)
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return topicTemplate{}, fmt.Errorf("%q has a '{' without '}'", s)
		}
		name := rest[i+1 : i+j]
		switch name {
		case "tenant", "source", "account":
			t.parts = append(t.parts, topicPart{field: name})
		default:
			return topicTemplate{}, fmt.Errorf("%q has an unknown placeholder {%s} (known: {tenant}, {source}, {account})", s, name)
		}
		rest = rest[i+j+1:]
	}
	for _, p := range t.parts {
		if p.field != "" {
			continue
		}
		for _, r := range p.literal {
			if !topicChar(r) {
				return topicTemplate{}, fmt.Errorf("%q holds %q, which a topic name cannot (letters, digits, '.', '_', '-')", s, r)
			}
		}
	}
	if name := t.nameOf(record.Stream{Tenant: "x", Source: "x", Account: "x"}); name == "." || name == ".." {
		return topicTemplate{}, fmt.Errorf("%q is not a valid topic name", s)
	}
	return t, nil
}

// name is nameOf the stream (source, account) of the one-tenant form.
func (t topicTemplate) name(source, account string) string {
	return t.nameOf(record.Stream{Source: source, Account: account})
}

// nameOf renders the template for one stream. Characters of the source or
// account that a topic name cannot hold become '_'; a name over Kafka's 249
// characters is cut. {tenant} is record.TenantLabel of the stream's
// tenant: "default" for the one-tenant form.
func (t topicTemplate) nameOf(st record.Stream) string {
	var b strings.Builder
	for _, p := range t.parts {
		switch p.field {
		case "tenant":
			writeSanitized(&b, st.TenantName())
		case "source":
			writeSanitized(&b, st.Source)
		case "account":
			writeSanitized(&b, st.Account)
		default:
			b.WriteString(p.literal)
		}
	}
	s := b.String()
	if len(s) > maxTopicLen {
		s = s[:maxTopicLen]
	}
	return s
}

func writeSanitized(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if topicChar(rune(c)) {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
}

func topicChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
}

// Topics returns the distinct topics of the streams, sorted: those given
// to New and those Write met since.
func (s *Sink) Topics() []string {
	s.topicMu.RLock()
	defer s.topicMu.RUnlock()
	ts := slices.Sorted(maps.Values(s.topics))
	return slices.Compact(ts)
}

// prepareTopics checks that topics exist, creates the missing ones when
// configured, learns their batch limits and marks them ready.
func (s *Sink) prepareTopics(ctx context.Context, adm *kadm.Client, topics []string) error {
	if len(topics) == 0 {
		return nil
	}
	details, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return fmt.Errorf("kafka sink: list topics %s: %w", strings.Join(topics, ","), err)
	}
	var missing []string
	for _, t := range topics {
		d, ok := details[t]
		switch {
		case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
			missing = append(missing, t)
		case d.Err != nil:
			return fmt.Errorf("kafka sink: topic %q: %w", t, d.Err)
		}
	}
	if len(missing) > 0 && !s.cfg.CreateTopics {
		var errs []error
		for _, t := range missing {
			errs = append(errs, fmt.Errorf("kafka sink: topic %q %w (streams %s); create it or set %s.create_topics: true",
				t, errTopicMissing, s.streamsOf(t), prefix))
		}
		return errors.Join(errs...)
	}
	if len(missing) > 0 {
		resp, err := adm.CreateTopics(ctx, int32(s.cfg.Partitions), int16(s.cfg.ReplicationFactor), nil, missing...)
		if err != nil {
			return fmt.Errorf("kafka sink: create topics %s: %w", strings.Join(missing, ","), err)
		}
		for _, t := range missing {
			r, ok := resp[t]
			switch {
			case !ok:
				return fmt.Errorf("kafka sink: create topic %q: no answer from the cluster", t)
			case r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists):
				return fmt.Errorf("kafka sink: create topic %q (partitions %d, replication factor %d): %w %s",
					t, s.cfg.Partitions, s.cfg.ReplicationFactor, r.Err, r.ErrMessage)
			case r.Err == nil:
				s.log.Info("created kafka topic", "topic", t, "partitions", r.NumPartitions, "replication_factor", r.ReplicationFactor)
			}
		}
	}
	s.learnLimits(ctx, adm, topics)
	s.topicMu.Lock()
	for _, t := range topics {
		s.ready[t] = true
	}
	s.topicMu.Unlock()
	return nil
}

// learnLimits reads max.message.bytes of topics and caps their batches at
// it. A cluster that does not tell (ACLs) leaves BatchMaxBytes in force.
func (s *Sink) learnLimits(ctx context.Context, adm *kadm.Client, topics []string) {
	limits, err := topicLimits(ctx, adm, topics)
	if err != nil {
		s.log.Warn("cannot read the topics' max.message.bytes; batches are capped at sink.kafka.batch_max_bytes only",
			"topics", strings.Join(topics, ","), "err", err)
	}
	s.topicMu.Lock()
	defer s.topicMu.Unlock()
	for _, t := range topics {
		l := int32(s.cfg.BatchMaxBytes)
		if v, ok := limits[t]; ok && v < int(l) {
			l = int32(v)
		}
		s.limits[t] = l
	}
}

// topicLimits returns max.message.bytes of each topic that reports it.
func topicLimits(ctx context.Context, adm *kadm.Client, topics []string) (map[string]int, error) {
	rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
	out := make(map[string]int)
	for _, rc := range rcs {
		if rc.Err != nil {
			continue
		}
		for _, c := range rc.Configs {
			if c.Key != "max.message.bytes" || c.Value == nil {
				continue
			}
			if n, perr := strconv.Atoi(*c.Value); perr == nil && n > 0 {
				out[rc.Name] = n
			}
		}
	}
	if err != nil {
		return out, fmt.Errorf("describe topic configs: %w", err)
	}
	return out, nil
}

// batchLimit is franz-go's ProducerBatchMaxBytesFn. franz-go asks once per
// partition when it first produces to it.
func (s *Sink) batchLimit(topic string) int32 {
	s.topicMu.RLock()
	l, ok := s.limits[topic]
	s.topicMu.RUnlock()
	if !ok {
		l = int32(s.cfg.BatchMaxBytes)
	}
	return max(512, min(l, 1<<30))
}

func (s *Sink) streamsOf(topic string) string {
	s.topicMu.RLock()
	defer s.topicMu.RUnlock()
	var out []string
	for st, t := range s.topics {
		if t == topic {
			out = append(out, st.Source+"/"+st.Account)
		}
	}
	if len(out) == 0 {
		return "none configured"
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// topicFor returns the topic of a stream, checking (or creating) it on the
// cluster the first time a stream that New was not told about shows up.
func (s *Sink) topicFor(ctx context.Context, st record.Stream) (string, error) {
	s.topicMu.RLock()
	t, known := s.topics[st]
	ready := known && s.ready[t]
	s.topicMu.RUnlock()
	if ready {
		return t, nil
	}
	if !known {
		t = s.conn.tmpl.nameOf(st)
	}
	s.ensureMu.Lock()
	defer s.ensureMu.Unlock()
	s.topicMu.RLock()
	ready = s.ready[t]
	s.topicMu.RUnlock()
	if !ready {
		if err := s.prepareTopics(ctx, s.adm, []string{t}); err != nil {
			return "", err
		}
	}
	if !s.knowsEnds(t) {
		// Before the first batch is handed there (ledger.go).
		if err := s.learnEnds(ctx, []string{t}); err != nil {
			return "", err
		}
	}
	s.topicMu.Lock()
	s.topics[st] = t
	s.topicMu.Unlock()
	return t, nil
}

// relearnLimit reads a topic's max.message.bytes again after a
// MESSAGE_TOO_LARGE that the record alone does not explain.
func (s *Sink) relearnLimit(ctx context.Context, topic string) {
	before := s.batchLimit(topic)
	s.learnLimits(ctx, s.adm, []string{topic})
	after := s.batchLimit(topic)
	if after < before {
		// franz-go caches the cap per partition: batches keep their old
		// size until the client is rebuilt.
		s.log.Error("topic's max.message.bytes is below the batch size the producer uses; restart the collector or lower sink.kafka.batch_max_bytes",
			"topic", topic, "max_message_bytes", after, "producer_batch_max_bytes", before)
	}
}
