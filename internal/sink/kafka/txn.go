package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/sinkhelper"
)

// Transactions (sink.kafka.transactional_id, delivery exactly_once): each
// Write is one transaction, so a read_committed consumer sees a batch
// whole or not at all, and a crash mid-Write leaves nothing visible to it.
// Recover fences the transactional id before its read-back: the dead
// process's open transaction is aborted and its producer, should it still
// run (a zombie), can commit nothing more.

// transactional reports whether Writes are transactions.
func (s *Sink) transactional() bool { return s.cfg.TransactionalID != "" && s.exactlyOnce() }

// txEndTimeout bounds an abort that runs after the Write's context ended.
const txEndTimeout = 30 * time.Second

// pushTx produces send in one transaction and commits it; any failed
// record aborts the whole transaction and the batch is retried whole (a
// record too large on its own was dead-lettered before, in push).
func (s *Sink) pushTx(ctx context.Context, b *record.Batch, cl *kgo.Client, send []*kgo.Record, dead []sinkhelper.DeadLetter, began time.Time) (sinkhelper.Written, error) {
	s.txMu.Lock()
	defer s.txMu.Unlock()
	if err := cl.BeginTransaction(); err != nil {
		return sinkhelper.Written{}, s.fail(b, errKind(err), fmt.Errorf("begin transaction (%s.transactional_id %q): %w", prefix, s.cfg.TransactionalID, err))
	}
	results, err := s.produce(ctx, ctx, cl, send)
	if err != nil {
		s.abort(cl)
		return sinkhelper.Written{}, s.fail(b, kindCanceled, fmt.Errorf("%d records not all acknowledged before the context ended; transaction aborted: %w", len(send), err))
	}
	if ferr := results.FirstErr(); ferr != nil {
		s.abort(cl)
		nErr := 0
		for _, r := range results {
			if r.Err != nil {
				nErr++
			}
		}
		return sinkhelper.Written{}, s.fail(b, errKind(ferr), fmt.Errorf("%d of %d records not acknowledged; transaction aborted, nothing of the batch is visible: %w", nErr, len(send), txHint(ferr)))
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		s.m.txAborted.Inc()
		return sinkhelper.Written{}, s.fail(b, errKind(err), fmt.Errorf("commit transaction: %w", txHint(err)))
	}
	s.m.txCommitted.Inc()
	s.m.produceLatency.Observe(time.Since(began).Seconds())
	s.noteStored(results)
	return sinkhelper.Written{Records: len(b.Envelopes) - len(dead), DeadLetters: dead}, nil
}

// abort drops what the producer still holds and aborts the open
// transaction; a failed abort leaves the transaction to the broker's
// transaction timeout or the next fence.
func (s *Sink) abort(cl *kgo.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), txEndTimeout)
	defer cancel()
	if err := cl.AbortBufferedRecords(ctx); err != nil {
		s.log.Warn("kafka sink: drop the records of an aborted transaction", "err", err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		s.log.Warn("kafka sink: abort transaction", "err", err)
	}
	s.m.txAborted.Inc()
}

// txHint names the key to look at when the brokers refuse transactions.
func txHint(err error) error {
	switch {
	case errors.Is(err, kerr.TransactionalIDAuthorizationFailed), errors.Is(err, kerr.ClusterAuthorizationFailed):
		return fmt.Errorf("the brokers refuse transactions to this principal: grant WRITE and DESCRIBE on the transactional id %s.transactional_id (and IDEMPOTENT_WRITE on the cluster before Kafka 3.0), or empty %s.transactional_id: %w", prefix, prefix, err)
	case errors.Is(err, kerr.ProducerFenced), errors.Is(err, kerr.InvalidProducerEpoch):
		return fmt.Errorf("another collector started with the same %s.transactional_id and fenced this one: two collectors must never share it: %w", prefix, err)
	case errors.Is(err, kerr.UnsupportedVersion), errors.Is(err, kerr.CoordinatorNotAvailable):
		return fmt.Errorf("the brokers do not offer transactions (transaction.state.log topic, Kafka 0.11+): empty %s.transactional_id: %w", prefix, err)
	}
	return err
}

// fence initialises the transactional id at the transaction coordinator,
// which aborts any transaction a previous process left open and bumps the
// id's epoch, so a zombie of that process commits nothing more. The
// sink's producer takes its own (next) epoch at its first transaction.
func (s *Sink) fence(ctx context.Context, cl *kgo.Client) error {
	id := s.cfg.TransactionalID
	for {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = &id
		req.TransactionTimeoutMillis = 60_000
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if errors.Is(err, kerr.ConcurrentTransactions) {
			// The abort of the old transaction is still under way.
			select {
			case <-ctx.Done():
				return fmt.Errorf("kafka sink: fence %s.transactional_id %q: %w", prefix, id, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("kafka sink: fence %s.transactional_id %q: %w", prefix, id, txHint(err))
		}
		return nil
	}
}
