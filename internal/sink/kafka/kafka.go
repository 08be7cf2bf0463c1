package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
)

var _ sink.Sink = (*Sink)(nil)

// Lifecycle states of a Sink.
const (
	stateNew = iota
	stateStarted
	stateClosed
)

// Sink writes batches of envelopes to Kafka with franz-go's idempotent
// producer: key = record id, headers = the envelope's fields, value per
// Config.Format (see the package documentation). Build it with New; the
// zero value is not usable. Write, Ready and Shutdown are safe for
// concurrent use.
type Sink struct {
	cfg     Config
	tmpl    topicTemplate
	streams []Stream
	tls     *tls.Config
	mech    sasl.Mechanism
	log     *slog.Logger
	m       *metrics
	enc     encoder
	dl      *deadLetters

	client atomic.Pointer[kgo.Client]
	adm    *kadm.Client // set by Start

	// mu guards state and orders Write registrations (wg.Add) before
	// Shutdown's wg.Wait.
	mu    sync.RWMutex
	state int
	wg    sync.WaitGroup // Write calls and their producing goroutines

	// topicMu guards topics, ready and limits.
	topicMu sync.RWMutex
	topics  map[Stream]string
	ready   map[string]bool  // topics checked (or created) on the cluster
	limits  map[string]int32 // batch cap per topic: min(BatchMaxBytes, max.message.bytes)
	// ensureMu serializes checking topics first seen by Write.
	ensureMu sync.Mutex
}

// New builds a Kafka sink for cfg, which must be valid (Validate). streams
// are the (source, account) pairs the sink will be handed: Start checks (or
// creates) their topics. deadLetterDir is the directory of the dead-letter
// file (DeadLetterFile), usually the checkpoint's; it must be writable by
// the time a record needs it. Metrics are registered with reg (nil: none);
// log receives the sink's and franz-go's warnings. New does not connect.
func New(cfg Config, streams []Stream, deadLetterDir string, reg prometheus.Registerer, log *slog.Logger) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deadLetterDir == "" {
		return nil, errors.New("kafka sink: a dead-letter directory is required (records too large for the broker go there)")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tmpl, err := parseTopicTemplate(cfg.Topic)
	if err != nil {
		return nil, fmt.Errorf("%s.topic: %w", prefix, err)
	}
	tc, err := tlsConfig(cfg.TLS)
	if err != nil {
		return nil, err
	}
	mech, err := saslMechanism(cfg.SASL)
	if err != nil {
		return nil, err
	}
	s := &Sink{
		cfg:     cfg,
		tmpl:    tmpl,
		streams: slices.Clone(streams),
		tls:     tc,
		mech:    mech,
		log:     log.With("sink", sinkName),
		enc:     encoder{format: cfg.Format, contentType: []byte(ContentType)},
		dl:      newDeadLetters(deadLetterDir, time.Now),
		topics:  make(map[Stream]string),
		ready:   make(map[string]bool),
		limits:  make(map[string]int32),
	}
	if s.m, err = newMetrics(reg, &s.client); err != nil {
		return nil, err
	}
	for _, st := range streams {
		s.topics[st] = tmpl.name(st.Source, st.Account)
	}
	return s, nil
}

// Topics returns the distinct topics of the configured streams, sorted.
func (s *Sink) Topics() []string {
	s.topicMu.RLock()
	defer s.topicMu.RUnlock()
	var ts []string
	for _, st := range s.streams {
		ts = append(ts, s.topics[st])
	}
	slices.Sort(ts)
	return slices.Compact(ts)
}

// Start creates the dead-letter directory if needed, connects to the
// cluster, checks that it answers, and checks that the topic of every
// configured stream exists, creating the missing ones when
// Config.CreateTopics is set. It learns each topic's max.message.bytes to
// size batches. A missing topic without CreateTopics is an error naming it.
// Start starts no goroutine that outlives Shutdown (franz-go's are closed by
// Shutdown, or here when Start fails). A failed Start may be tried again.
func (s *Sink) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case stateStarted:
		return errors.New("kafka sink: already started")
	case stateClosed:
		return errors.New("kafka sink: shut down")
	}
	if err := os.MkdirAll(filepath.Dir(s.dl.path), 0o750); err != nil {
		return fmt.Errorf("kafka sink: dead-letter directory: %w", err)
	}
	if s.cfg.TLS.InsecureSkipVerify {
		s.log.Warn("TLS certificate verification is off (sink.kafka.tls.insecure_skip_verify): anyone on the path can read and alter what the collector sends")
	}
	if s.cfg.SASL.Mechanism == "PLAIN" && !s.cfg.TLS.Enabled {
		s.log.Warn("SASL PLAIN without TLS sends the password in clear text (sink.kafka.tls.enabled is false)")
	}
	opts := append(connOpts(s.cfg, s.tls, s.mech, s.log), producerOpts(s.cfg, s.batchLimit)...)
	opts = append(opts, kgo.WithHooks(s.m))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka sink: create client: %w", err)
	}
	adm := kadm.NewClient(cl)
	if err := cl.Ping(ctx); err != nil {
		cl.Close()
		return fmt.Errorf("kafka sink: reach brokers %s%s: %w", strings.Join(s.cfg.Brokers, ","), connHint(s.cfg, err), err)
	}
	if err := s.prepareTopics(ctx, adm, s.Topics()); err != nil {
		cl.Close()
		return err
	}
	s.adm = adm
	s.client.Store(cl)
	s.state = stateStarted
	s.log.Info("kafka sink started", "brokers", strings.Join(s.cfg.Brokers, ","), "topics", strings.Join(s.Topics(), ","),
		"format", s.cfg.Format, "compression", s.cfg.Compression, "partitioner", s.cfg.Partitioner)
	return nil
}

// connHint explains a failed connection where the error alone is obscure:
// brokers refusing a SASL login may just close the connection.
func connHint(cfg Config, err error) string {
	if cfg.SASL.Mechanism != "" && (errors.Is(err, io.EOF) || errors.Is(err, kerr.SaslAuthenticationFailed)) {
		return fmt.Sprintf(" (SASL %s as %q refused or connection closed: check %s.sasl.username and password)",
			cfg.SASL.Mechanism, cfg.SASL.Username, prefix)
	}
	return ""
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
			errs = append(errs, fmt.Errorf("kafka sink: topic %q does not exist (streams %s); create it or set %s.create_topics: true",
				t, s.streamsOf(t), prefix))
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
	for _, st := range s.streams {
		if s.topics[st] == topic {
			out = append(out, st.Source+"/"+st.Account)
		}
	}
	if len(out) == 0 {
		return "none configured"
	}
	return strings.Join(out, ",")
}

// topicFor returns the topic of a stream, checking (or creating) it on the
// cluster the first time a stream that New was not told about shows up.
func (s *Sink) topicFor(ctx context.Context, source, account string) (string, error) {
	st := Stream{Source: source, Account: account}
	s.topicMu.RLock()
	t, known := s.topics[st]
	ready := known && s.ready[t]
	s.topicMu.RUnlock()
	if ready {
		return t, nil
	}
	if !known {
		t = s.tmpl.name(source, account)
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
	s.topicMu.Lock()
	if _, ok := s.topics[st]; !ok {
		s.topics[st] = t
		s.streams = append(s.streams, st)
	}
	s.topicMu.Unlock()
	return t, nil
}

// begin registers a Write; the caller calls s.wg.Done when it returns.
func (s *Sink) begin() (*kgo.Client, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	switch s.state {
	case stateNew:
		return nil, errors.New("kafka sink: Write before Start")
	case stateClosed:
		return nil, errors.New("kafka sink: shut down")
	}
	s.wg.Add(1)
	return s.client.Load(), nil
}

// Write produces every envelope of b and returns nil only when the brokers
// acknowledged each one (acks=all) or, for a record too large to ever be
// accepted, its dead-letter line is fsynced. A record too large for the
// topic (over min(batch_max_bytes, max.message.bytes) alone, or refused
// with MESSAGE_TOO_LARGE on its own account) is dead-lettered and counted;
// the rest of the batch goes on. Any other failure is an error and nothing
// of b may be taken as delivered: the pipeline retries the batch and the
// keys make repeats harmless. When ctx ends first, Write returns ctx.Err();
// records already handed to the producer may still arrive (at least once).
func (s *Sink) Write(ctx context.Context, b *record.Batch) error {
	start := time.Now()
	defer func() { s.m.shared.WriteDuration.Observe(time.Since(start).Seconds()) }()
	cl, err := s.begin()
	if err != nil {
		s.m.shared.Error(kindClosed)
		return err
	}
	defer s.wg.Done()
	dead, kind, err := s.write(ctx, cl, b)
	if err != nil {
		s.m.shared.Error(kind)
		return err
	}
	s.m.shared.Records.Add(float64(len(b.Envelopes) - dead))
	return nil
}

// write is Write's body. It returns how many records were dead-lettered,
// or the error kind with an error.
func (s *Sink) write(ctx context.Context, cl *kgo.Client, b *record.Batch) (int, string, error) {
	n := len(b.Envelopes)
	if n == 0 {
		return 0, "", nil
	}
	if err := ctx.Err(); err != nil {
		return 0, kindCanceled, fmt.Errorf("kafka sink: write %s/%s page %d: %w", b.Source, b.Account, b.Page, err)
	}
	topics := make([]string, n)
	for i := range b.Envelopes {
		e := &b.Envelopes[i]
		if i > 0 && e.Source == b.Envelopes[i-1].Source && e.Account == b.Envelopes[i-1].Account {
			topics[i] = topics[i-1]
			continue
		}
		t, err := s.topicFor(ctx, e.Source, e.Account)
		if err != nil {
			return 0, kindUnknownTopic, fmt.Errorf("kafka sink: write %s/%s page %d: %w", b.Source, b.Account, b.Page, err)
		}
		topics[i] = t
	}
	recs := s.enc.encode(b.Envelopes, topics)

	// Records that cannot fit a batch of their own are dead letters before
	// they reach the producer.
	var dead []deadLetter
	send := make([]*kgo.Record, 0, n)
	idx := make([]int, 0, n) // envelope index of send[j]
	limitTopic, limit := "", 0
	for i := range recs {
		if topics[i] != limitTopic {
			limitTopic, limit = topics[i], int(s.batchLimit(topics[i]))
		}
		if size := standaloneSize(&recs[i]); size > limit {
			dead = append(dead, deadLetter{env: &b.Envelopes[i], topic: topics[i], kind: reasonTooLarge,
				reason: fmt.Sprintf("record of %d bytes (as a record batch of its own) exceeds the %d-byte limit of topic %s: the smaller of %s.batch_max_bytes and the topic's max.message.bytes",
					size, limit, topics[i], prefix)})
			continue
		}
		send = append(send, &recs[i])
		idx = append(idx, i)
	}

	if len(send) > 0 {
		produceStart := time.Now()
		results, err := s.produce(ctx, cl, send)
		if err != nil {
			return 0, kindCanceled, fmt.Errorf("kafka sink: write %d records of %s/%s page %d: not all acknowledged before the context ended: %w",
				n, b.Source, b.Account, b.Page, err)
		}
		var failed []kgo.ProduceResult
		for _, r := range results {
			if r.Err != nil {
				failed = append(failed, r)
			}
		}
		if len(failed) > 0 {
			more, kind, err := s.sortFailures(ctx, b, send, idx, topics, failed)
			if err != nil {
				return 0, kind, err
			}
			dead = append(dead, more...)
		} else {
			s.m.produceLatency.Observe(time.Since(produceStart).Seconds())
		}
	}

	if len(dead) > 0 {
		if err := s.dl.write(dead); err != nil {
			return 0, kindDeadLetter, fmt.Errorf("kafka sink: write %s/%s page %d: %d records too large for kafka: %w",
				b.Source, b.Account, b.Page, len(dead), err)
		}
		for _, d := range dead {
			s.m.deadLetters.WithLabelValues(d.kind).Inc()
			s.log.Warn("record dead-lettered", "id", d.env.ID, "source", d.env.Source, "account", d.env.Account,
				"topic", d.topic, "reason", d.reason, "file", s.dl.path)
		}
	}
	return len(dead), "", nil
}

// produce hands recs to the producer and waits for every promise or for
// ctx. The producing goroutine outlives an early return until franz-go has
// settled each record (acknowledged, failed, or failed by Shutdown's Close);
// Shutdown waits for it.
func (s *Sink) produce(ctx context.Context, cl *kgo.Client, recs []*kgo.Record) (kgo.ProduceResults, error) {
	done := make(chan kgo.ProduceResults, 1)
	s.wg.Add(1) // the caller's registration keeps the counter above zero
	go func() {
		defer s.wg.Done()
		// ProduceSync stops the linger of these records' partitions once
		// all are buffered, so a Write never waits a full linger.
		res := cl.ProduceSync(ctx, recs...)
		for _, r := range res {
			if r.Err != nil {
				s.m.produceErrors.WithLabelValues(errKind(r.Err)).Inc()
			}
		}
		done <- res
	}()
	select {
	case res := <-done:
		return res, nil
	case <-ctx.Done():
		select {
		case res := <-done:
			return res, nil
		default:
			return nil, ctx.Err()
		}
	}
}

// sortFailures splits failed records into dead letters (too large on their
// own) and an error for everything else.
func (s *Sink) sortFailures(ctx context.Context, b *record.Batch, send []*kgo.Record, idx []int, topics []string,
	failed []kgo.ProduceResult,
) ([]deadLetter, string, error) {
	pos := make(map[*kgo.Record]int, len(send))
	for j, r := range send {
		pos[r] = idx[j]
	}
	var dead []deadLetter
	var firstErr error
	firstKind, nErr := "", 0
	refreshed := map[string]bool{}
	for _, f := range failed {
		i, ok := pos[f.Record]
		if !ok { // cannot happen: franz-go returns our records
			return nil, kindOther, fmt.Errorf("kafka sink: producer returned a record it was not given: %w", f.Err)
		}
		topic := topics[i]
		if errors.Is(f.Err, kerr.MessageTooLarge) {
			size := standaloneSize(f.Record)
			if size+tooLargeSlack <= int(s.batchLimit(topic)) && !refreshed[topic] {
				// Refused in company: the broker's limit may be lower than
				// the one we know. Learn it again before judging.
				refreshed[topic] = true
				s.relearnLimit(ctx, topic)
			}
			limit := int(s.batchLimit(topic))
			if size+tooLargeSlack > limit {
				dead = append(dead, deadLetter{env: &b.Envelopes[i], topic: topic, kind: reasonTooLarge,
					reason: fmt.Sprintf("broker or producer refused the record (%v); alone it makes a record batch of %d bytes against the %d-byte limit of topic %s",
						f.Err, size, limit, topic)})
				continue
			}
			f.Err = fmt.Errorf("refused in a record batch over topic %s's limit, though %d bytes alone fit its %d: %w", topic, size, limit, f.Err)
		}
		nErr++
		if firstErr == nil {
			firstErr, firstKind = f.Err, errKind(f.Err)
		}
	}
	if firstErr != nil {
		return nil, firstKind, fmt.Errorf("kafka sink: write %s/%s page %d: %d of %d records not acknowledged (first error: %s): %w",
			b.Source, b.Account, b.Page, nErr, len(b.Envelopes), firstKind, firstErr)
	}
	return dead, "", nil
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

// errKind classifies a produce error for metrics.
func errKind(err error) string {
	var ke *kerr.Error
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return kindCanceled
	case errors.Is(err, kgo.ErrRecordTimeout), errors.Is(err, kerr.RequestTimedOut):
		return kindTimeout
	case errors.Is(err, kgo.ErrClientClosed):
		return kindClosed
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
		return kindTooLarge
	case errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.UnknownTopicID):
		return kindUnknownTopic
	case errors.Is(err, kerr.SaslAuthenticationFailed), errors.Is(err, kerr.TopicAuthorizationFailed),
		errors.Is(err, kerr.ClusterAuthorizationFailed), errors.Is(err, kerr.TransactionalIDAuthorizationFailed),
		errors.Is(err, kerr.IllegalSaslState), errors.Is(err, kerr.UnsupportedSaslMechanism):
		return kindAuth
	case errors.As(err, &ke):
		return kindBroker
	}
	var ce *tls.CertificateVerificationError
	if errors.As(err, &ce) {
		return kindAuth
	}
	return kindOther
}

// Ready reports whether a broker answers now (a metadata request), for
// /readyz and collector check.
func (s *Sink) Ready(ctx context.Context) error {
	s.mu.RLock()
	state := s.state
	s.mu.RUnlock()
	switch state {
	case stateNew:
		return errors.New("kafka sink: not started")
	case stateClosed:
		return errors.New("kafka sink: shut down")
	}
	if err := s.client.Load().Ping(ctx); err != nil {
		return fmt.Errorf("kafka sink: ping brokers: %w", err)
	}
	return nil
}

// Shutdown stops accepting Writes, flushes what the producer holds until
// ctx ends, closes the client (records still unacknowledged then fail, so
// their Writes return errors and the pipeline keeps them for the next run)
// and closes the dead-letter file. It waits for running Writes up to ctx.
// It is safe to call twice and without Start.
func (s *Sink) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.state == stateClosed {
		s.mu.Unlock()
		return nil
	}
	s.state = stateClosed
	s.mu.Unlock()

	var errs []error
	if cl := s.client.Load(); cl != nil {
		if err := cl.Flush(ctx); err != nil {
			errs = append(errs, fmt.Errorf("kafka sink: flush %d buffered records: %w", cl.BufferedProduceRecords(), err))
		}
		cl.Close()
	}
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("kafka sink: waiting for writes to end: %w", ctx.Err()))
	}
	if err := s.dl.close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
