package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/kafka/kafkarecord"
	"github.com/svcexport/collector/internal/sink/kafka/kafkasasl"
	"github.com/svcexport/collector/internal/sink/ocsfenc"
	"github.com/svcexport/collector/internal/sink/sinkhelper"
)

var _ sink.Sink = (*Sink)(nil)

// Sink writes batches of envelopes to Kafka with franz-go's idempotent
// producer: key = record id or account/entity (Config.KeyOf), headers =
// the envelope's fields, value per Config.Format (see the package
// documentation). Build it with New; the zero value is not usable. Its
// Start, Write, Ready and Shutdown are sinkhelper.Base's, which runs the
// sink's own steps: start, push, ping, drain and close. Its methods are
// safe for concurrent use.
type Sink struct {
	*sinkhelper.Base

	cfg  Config
	conn conn
	log  *slog.Logger
	m    *metrics
	enc  kafkarecord.Encoder

	// client and adm are set by start; pushes, which sinkhelper runs only
	// after start, read them.
	client atomic.Pointer[kgo.Client]
	adm    *kadm.Client
	// producing counts the goroutines of produce, which outlive a Write
	// whose ctx ended until franz-go settles its records.
	producing sync.WaitGroup

	// topicMu guards topics, ready and limits.
	topicMu sync.RWMutex
	topics  map[record.Stream]string // the streams given to New and met by Write
	ready   map[string]bool          // topics checked (or created) on the cluster
	limits  map[string]int32         // batch cap per topic: min(BatchMaxBytes, max.message.bytes)
	// ensureMu serializes checking topics first seen by Write.
	ensureMu sync.Mutex
	// purges are the topics purged from the client after their
	// recreation (healRecreated).
	purges purges
	// led is the ledger of delivery exactly_once (ledger.go).
	led kledger
	// txMu holds one transaction at a time (transactional_id set): a
	// transactional producer has one open transaction, so the Writes of
	// different streams take turns.
	txMu sync.Mutex
}

// Option is an optional dependency of New.
type Option func(*options)

type options struct {
	scrub *secret.Scrubber
}

// WithScrubber gives the sink the process's secret scrubber
// (secret.Scrubber): the sink's errors and franz-go's log lines, which
// may hold a broker's or an OAuth token endpoint's words, pass it, and it
// learns the SASL secrets the sink reads. Default: a scrubber of the
// sink's own SASL secrets.
func WithScrubber(s *secret.Scrubber) Option { return func(o *options) { o.scrub = s } }

// New builds a Kafka sink for cfg, which must be valid (Validate). streams
// are the (source, account) pairs the sink will be handed: Start checks (or
// creates) their topics. deadLetterDir is the directory of the dead-letter
// file (sinkhelper.DeadLetterFile), usually the checkpoint's; Start creates
// it. Metrics are registered with reg (nil: none); log receives the sink's
// and franz-go's warnings; with format "ocsf" collector_ocsf_fallbacks_total
// too. New does not connect.
func New(cfg Config, streams []record.Stream, deadLetterDir string, reg prometheus.Registerer, log *slog.Logger, opts ...Option) (*Sink, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	cn, err := prepare(cfg, log.With("sink", sinkName), o.scrub, nil)
	if err != nil {
		return nil, err
	}
	if deadLetterDir == "" {
		return nil, errors.New("kafka sink: a dead-letter directory is required (records too large for the broker go there)")
	}
	s := &Sink{
		cfg:    cfg,
		conn:   cn,
		log:    log.With("sink", sinkName),
		enc:    kafkarecord.Encoder{Raw: cfg.Format == FormatRecord, FetchedTimestamp: cfg.Timestamp == TimestampFetched, EntityKeys: cfg.entityKeys()},
		topics: make(map[record.Stream]string),
		ready:  make(map[string]bool),
		limits: make(map[string]int32),
		led:    kledger{end: map[tp]int64{}, cov: sinkhelper.NewCoverage(), landed: map[landedKey]map[string]struct{}{}},
	}
	s.Base, err = sinkhelper.New(sinkName, reg, s.push, sinkhelper.WithLogger(s.log),
		sinkhelper.WithStart(s.start), sinkhelper.WithReady(s.ping),
		sinkhelper.WithDrain(s.drain), sinkhelper.WithClose(s.close), sinkhelper.WithErrorScrub(cn.scrub.Error),
		sinkhelper.WithDeadLetters(deadLetterDir, "topic"), sinkhelper.WithDeadLetterReasons(reasonTooLarge),
		sinkhelper.WithErrorKinds(kindTooLarge, kindTimeout, kindCanceled, kindAuth, kindUnknownTopic, kindBroker, kindClosed, kindOther, kindInvalid))
	if err != nil {
		return nil, err
	}
	if s.m, err = newMetrics(reg, &s.client, s.CountBytes); err != nil {
		return nil, err
	}
	if cfg.Format == FormatOCSF {
		if s.enc.OCSF, err = ocsfenc.New(cfg.OCSF, reg); err != nil {
			return nil, fmt.Errorf("kafka sink: %w", err)
		}
	}
	for _, st := range streams {
		s.topics[st] = cn.tmpl.nameOf(st)
	}
	return s, nil
}

// start is Start's own step: it connects to the cluster, checks that it
// answers, and checks that the topic of every configured stream exists,
// creating the missing ones when Config.CreateTopics is set. It learns each
// topic's max.message.bytes to size batches. A missing topic without
// CreateTopics is an error naming it. It starts no goroutine that outlives
// Shutdown (franz-go's are closed by drain, or here when start fails).
func (s *Sink) start(ctx context.Context) error {
	for _, w := range warnings(s.cfg) {
		s.log.Warn(w)
	}
	opts := append(connOpts(s.cfg, s.conn, s.log), producerOpts(s.cfg, s.batchLimit)...)
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
	s.log.Info("kafka sink started", "brokers", strings.Join(s.cfg.Brokers, ","), "topics", strings.Join(s.Topics(), ","),
		"format", s.cfg.Format, "compression", s.cfg.Compression, "partitioner", s.cfg.Partitioner)
	return nil
}

// connHint explains a failed connection where the error alone is obscure:
// brokers refusing a SASL login may just close the connection.
func connHint(cfg Config, err error) string {
	if cfg.SASL.Mechanism == "" || !errors.Is(err, io.EOF) && !errors.Is(err, kerr.SaslAuthenticationFailed) {
		return ""
	}
	switch cfg.SASL.Mechanism {
	case kafkasasl.OAuthBearer:
		return fmt.Sprintf(" (SASL OAUTHBEARER refused or connection closed: check the token of %s.sasl.oauth, its audience and scopes)", prefix)
	case kafkasasl.AWSMSKIAM:
		return fmt.Sprintf(" (SASL AWS_MSK_IAM refused or connection closed: check %s.sasl.aws or the AWS_* variables, the region, and that the IAM policy allows kafka-cluster:Connect)", prefix)
	}
	return fmt.Sprintf(" (SASL %s as %q refused or connection closed: check %s.sasl.username and password)",
		cfg.SASL.Mechanism, cfg.SASL.Username, prefix)
}

// ping is Ready's probe: whether a broker answers now (a metadata
// request), for /readyz and collector check.
func (s *Sink) ping(ctx context.Context) error {
	if err := s.client.Load().Ping(ctx); err != nil {
		return fmt.Errorf("kafka sink: ping brokers: %w", err)
	}
	return nil
}

// drain is Shutdown's first step: it flushes what the producer holds
// until ctx ends and closes the client, which fails the records still
// unacknowledged, so the Writes in flight return errors and the pipeline
// keeps their batches for the next run. Base then waits for them (up to
// ctx) and closes the dead-letter file.
func (s *Sink) drain(ctx context.Context) error {
	cl := s.client.Load()
	if cl == nil {
		return nil
	}
	var err error
	if ferr := cl.Flush(ctx); ferr != nil {
		err = fmt.Errorf("kafka sink: flush %d buffered records: %w", cl.BufferedProduceRecords(), ferr)
	}
	cl.Close()
	return err
}

// close is Shutdown's last step: the produce goroutines end once the
// closed client failed their records.
func (s *Sink) close() error {
	s.producing.Wait()
	return nil
}

// push is the sink's sinkhelper.PushFunc, the body of Write: it produces
// every envelope of b and returns nil only when the brokers acknowledged
// each one (acks=all) or, for a record too large to ever be accepted, its
// dead-letter line is fsynced. A record too large for the topic (over
// min(batch_max_bytes, max.message.bytes) alone, or refused with
// MESSAGE_TOO_LARGE on its own account) is dead-lettered and counted; the
// rest of the batch goes on. Any other failure is an error and nothing of
// b may be taken as written: the pipeline retries the batch and the keys
// make repeats harmless, unless the error is permanent (see the package
// documentation). When ctx ends first, Write returns ctx.Err(); records
// already handed to the producer may still arrive (at least once).
func (s *Sink) push(ctx context.Context, b *record.Batch) (sinkhelper.Written, error) {
	b = s.unlanded(b)
	n := len(b.Envelopes)
	topics := make([]string, n)
	for i := range b.Envelopes {
		e := &b.Envelopes[i]
		if i > 0 && e.Source == b.Envelopes[i-1].Source && e.Account == b.Envelopes[i-1].Account && e.Tenant == b.Envelopes[i-1].Tenant {
			topics[i] = topics[i-1]
			continue
		}
		// The topic is the stream's (the batch's): an edge stream is one
		// per token under edge.account while each of its envelopes names
		// its record's account (C6), which the topics checked at start
		// cannot know.
		st := record.Stream{Tenant: e.Tenant, Source: e.Source, Account: e.Account}
		if b.Source != "" {
			st = b.Stream()
		}
		t, err := s.topicFor(ctx, st)
		if err != nil {
			return sinkhelper.Written{}, s.fail(b, kindUnknownTopic, err)
		}
		topics[i] = t
	}
	if s.transactional() {
		// One transaction holds the whole batch: its records are encoded
		// together.
		send, _, dead, err := s.prepare(b, 0, n, topics)
		if err != nil {
			return sinkhelper.Written{}, err
		}
		if len(send) == 0 {
			return sinkhelper.Written{Records: n - len(dead), DeadLetters: dead}, nil
		}
		s.noteHanded(b, topics)
		return s.pushTx(ctx, b, s.client.Load(), send, dead, time.Now())
	}

	// The batch goes to the producer in chunks of about produceChunkBytes,
	// each encoded when the one before is acknowledged: what the sink holds
	// encoded is one chunk per Write, not a whole page (the envelopes are
	// the pipeline's already).
	var dead []sinkhelper.DeadLetter
	var landed []string // exactly_once: ids the chunks before stored
	handed := false
	produceStart := time.Now()
	pctx := ctx
	if s.cfg.DeliveryTimeout > 0 {
		var cancel context.CancelFunc
		pctx, cancel = context.WithTimeout(ctx, s.cfg.DeliveryTimeout)
		defer cancel()
	}
	for lo := 0; lo < n; {
		hi := chunkEnd(b.Envelopes, lo)
		send, idx, chunkDead, err := s.prepare(b, lo, hi, topics)
		if err != nil {
			s.noteLandedIDs(b, landed)
			return sinkhelper.Written{}, err
		}
		dead = append(dead, chunkDead...)
		if len(send) > 0 {
			if !handed {
				s.noteHanded(b, topics)
				handed = true
			}
			cl := s.client.Load()
			gen := s.purges.generation()
			results, err := s.produce(ctx, pctx, cl, send)
			if err != nil {
				s.noteLandedIDs(b, landed)
				return sinkhelper.Written{}, s.fail(b, kindCanceled, fmt.Errorf("%d records not all acknowledged before the context ended: %w", n, err))
			}
			results = s.healRecreated(ctx, cl, results, gen)
			more, err := s.sortFailures(ctx, b, send, idx, topics, results)
			if err != nil {
				s.noteLandedIDs(b, landed)
				s.noteLanded(b, results)
				return sinkhelper.Written{}, err
			}
			s.noteStored(results)
			dead = append(dead, more...)
			if s.exactlyOnce() && hi < n {
				landed = appendLanded(landed, b.Envelopes, idx, more)
			}
		}
		lo = hi
	}
	if handed && len(dead) == 0 {
		s.m.produceLatency.Observe(time.Since(produceStart).Seconds())
	}
	return sinkhelper.Written{Records: n - len(dead), DeadLetters: dead}, nil
}

// produceChunkBytes is about how many bytes of envelopes one Write encodes
// and hands to the producer at a time (chunkEnd). Each chunk is held about
// three times until acknowledged (encoded, in the producer's record
// batches, compressed); a 5,000-record page is about 17 chunks, one round
// trip each. From 1 MiB to 256 KiB the full-scale backfill's peak
// anonymous memory went from 97 to 80 MiB, the producer spent no more CPU
// a record, and compressed 2% less well (docs/performance.md).
const produceChunkBytes = 256 << 10

// chunkEnd returns the end of the chunk of envs that starts at lo: at
// least one envelope, and about produceChunkBytes of them.
func chunkEnd(envs []record.Envelope, lo int) int {
	size := 0
	hi := lo
	for hi < len(envs) && (hi == lo || size < produceChunkBytes) {
		size += envs[hi].Size()
		hi++
	}
	return hi
}

// appendLanded appends to ids the ids of the envelopes the producer
// stored: envs[idx[j]] for each record sent, but those dead-lettered.
func appendLanded(ids []string, envs []record.Envelope, idx []int, dead []sinkhelper.DeadLetter) []string {
	skip := make(map[*record.Envelope]bool, len(dead))
	for _, d := range dead {
		skip[d.Env] = true
	}
	for _, i := range idx {
		if !skip[&envs[i]] {
			ids = append(ids, envs[i].ID)
		}
	}
	return ids
}

// prepare encodes the envelopes lo to hi of b (topics[i] is the topic of
// b.Envelopes[i]) and returns the records to produce, the envelope index
// of each, and the dead letters of the records too large to ever be
// taken. It fails, permanently, only for a record the format cannot hold.
func (s *Sink) prepare(b *record.Batch, lo, hi int, topics []string) ([]*kgo.Record, []int, []sinkhelper.DeadLetter, error) {
	var extra []kgo.RecordHeader
	if s.exactlyOnce() {
		extra = []kgo.RecordHeader{{Key: HeaderBatch, Value: []byte(s.led.cov.BatchName(b))}}
	}
	recs, err := s.enc.Encode(b.Envelopes[lo:hi], topics[lo:hi], extra...)
	if err != nil {
		// Format ocsf only: the record can never be mapped.
		return nil, nil, nil, sink.Permanent(s.fail(b, kindInvalid, err))
	}

	// Records that cannot fit a batch of their own are dead letters before
	// they reach the producer.
	var dead []sinkhelper.DeadLetter
	send := make([]*kgo.Record, 0, len(recs))
	idx := make([]int, 0, len(recs)) // envelope index of send[j]
	limitTopic, limit := "", 0
	for j := range recs {
		i := lo + j
		if topics[i] != limitTopic {
			limitTopic, limit = topics[i], int(s.batchLimit(topics[i]))
		}
		if size := kafkarecord.StandaloneSize(&recs[j]); size > limit {
			dead = append(dead, sinkhelper.DeadLetter{Env: &b.Envelopes[i], Dest: topics[i], Kind: reasonTooLarge,
				Reason: fmt.Sprintf("record of %d bytes (as a record batch of its own) exceeds the %d-byte limit of topic %s: the smaller of %s.batch_max_bytes and the topic's max.message.bytes",
					size, limit, topics[i], prefix)})
			continue
		}
		send = append(send, &recs[j])
		idx = append(idx, i)
	}
	return send, idx, dead, nil
}

// fail says which batch failed and marks err with kind; an error that is
// permanent stays so.
func (s *Sink) fail(b *record.Batch, kind string, err error) error {
	err = sinkhelper.Kind(kind, fmt.Errorf("kafka sink: write %s/%s page %d: %w", b.Source, b.Account, b.Page, err))
	if permanent(err) {
		return sink.Permanent(err)
	}
	return err
}

// produce hands recs to the producer under deliver (which bounds their
// delivery: franz-go fails those it safely can when it ends) and waits for
// every promise or for ctx. The producing goroutine outlives an early
// return until franz-go has settled each record (acknowledged, failed, or
// failed by Shutdown's Close); Shutdown waits for it.
func (s *Sink) produce(ctx, deliver context.Context, cl *kgo.Client, recs []*kgo.Record) (kgo.ProduceResults, error) {
	done := make(chan kgo.ProduceResults, 1)
	s.producing.Go(func() {
		// ProduceSync stops the linger of these records' partitions once
		// all are buffered, so a Write never waits a full linger.
		res := cl.ProduceSync(deliver, recs...)
		for _, r := range res {
			if r.Err != nil {
				s.m.produceErrors.WithLabelValues(errKind(r.Err)).Inc()
			}
		}
		done <- res
	})
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

// sortFailures splits the failed records of results into dead letters (too
// large on their own) and an error for everything else, permanent when
// some record can never be taken.
func (s *Sink) sortFailures(ctx context.Context, b *record.Batch, send []*kgo.Record, idx []int, topics []string,
	results kgo.ProduceResults,
) ([]sinkhelper.DeadLetter, error) {
	pos := make(map[*kgo.Record]int, len(send))
	for j, r := range send {
		pos[r] = idx[j]
	}
	var dead []sinkhelper.DeadLetter
	var firstErr, forGood error
	nErr := 0
	refreshed := map[string]bool{}
	for _, f := range results {
		if f.Err == nil {
			continue
		}
		i, ok := pos[f.Record]
		if !ok { // cannot happen: franz-go returns our records
			return nil, s.fail(b, kindOther, fmt.Errorf("producer returned a record it was not given: %w", f.Err))
		}
		topic := topics[i]
		if errors.Is(f.Err, kerr.MessageTooLarge) {
			size := kafkarecord.StandaloneSize(f.Record)
			if size+kafkarecord.TooLargeSlack <= int(s.batchLimit(topic)) && !refreshed[topic] {
				// Refused in company: the broker's limit may be lower than
				// the one we know. Learn it again before judging.
				refreshed[topic] = true
				s.relearnLimit(ctx, topic)
			}
			limit := int(s.batchLimit(topic))
			if size+kafkarecord.TooLargeSlack > limit {
				dead = append(dead, sinkhelper.DeadLetter{Env: &b.Envelopes[i], Dest: topic, Kind: reasonTooLarge,
					Reason: fmt.Sprintf("broker or producer refused the record (%v); alone it makes a record batch of %d bytes against the %d-byte limit of topic %s",
						f.Err, size, limit, topic)})
				continue
			}
			f.Err = fmt.Errorf("refused in a record batch over topic %s's limit, though %d bytes alone fit its %d: %w", topic, size, limit, f.Err)
		}
		nErr++
		if firstErr == nil {
			firstErr = f.Err
		}
		if forGood == nil && permanent(f.Err) {
			forGood = f.Err
		}
	}
	if firstErr == nil {
		return dead, nil
	}
	// One record that can never be taken is enough for the batch never to
	// succeed: report that one.
	shown := firstErr
	if forGood != nil {
		shown = forGood
	}
	kind := errKind(shown)
	return nil, s.fail(b, kind, fmt.Errorf("%d of %d records not acknowledged (first error: %s): %w", nErr, len(b.Envelopes), kind, shown))
}

// permanent reports whether a broker's answer refuses the records for good:
// repeating the batch meets the same answer until an operator changes the
// cluster (see the package documentation).
func permanent(err error) bool {
	return errors.Is(err, errTopicMissing) ||
		errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed) ||
		errors.Is(err, kerr.InvalidTopicException) || errors.Is(err, kerr.InvalidRecord) ||
		errors.Is(err, kerr.PolicyViolation) || errors.Is(err, kerr.InvalidReplicationFactor) ||
		errors.Is(err, kerr.InvalidPartitions)
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
