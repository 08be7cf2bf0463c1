package kafka_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/kafka"
	"github.com/svcexport/collector/internal/testinfra/kafkatest"
)

// recoverWithin bounds the time from a topic's recreation to the first
// batch the new topic acknowledges. franz-go needs a metadata refresh to
// see the new topic id (at most MetadataMinAge, 5 s, after the last one)
// and one more, after the sink purged the topic, to load it afresh.
const recoverWithin = 15 * time.Second

// TestTopicDeletedAndRecreatedWhileRunning deletes the sink's topic and
// creates it again while the sink runs (issue 20 item 8). franz-go keeps
// the id of the topic it first produced to and refuses the new one with
// UNKNOWN_TOPIC_ID until the topic is purged from the client, so without
// help only a restart delivered again. The sink must recover by itself
// within recoverWithin, never call the error permanent (the pipeline would
// stop the stream), and never acknowledge a record the new topic does not
// hold.
//
// kfake gives each topic it creates a new random id, answers produce
// requests by id (v13, Kafka 4) with UNKNOWN_TOPIC_ID for an id it no
// longer knows, and reports ids in metadata, as Kafka does: franz-go
// takes the same path as against a real cluster. Limited to Kafka 3.9's
// versions it is a broker that takes produce requests by name, where
// franz-go sees the recreation in metadata only.
func TestTopicDeletedAndRecreatedWhileRunning(t *testing.T) {
	t.Parallel()
	const topic = "svc.dns"
	stream := []record.Stream{{Source: "dns", Account: "acme"}}

	for _, broker := range []struct {
		name     string
		versions *kversion.Versions
	}{
		{"produce by topic id (Kafka 4)", kversion.Stable()},
		{"produce by topic name (Kafka 3.9)", kversion.V3_9_0()},
	} {
		t.Run("between two writes, "+broker.name, func(t *testing.T) {
			t.Parallel()
			c := kafkatest.NewCluster(t, kfake.SeedTopics(3, topic), kfake.MaxVersions(broker.versions))
			adm := admin(t, c)
			s, _ := startSink(t, testConfig(c), stream, nil)
			write(t, s, makeBatch(t, "dns", "acme", 0, 0, 100, 20))

			deleteTopic(t, adm, topic)
			createTopic(t, adm, topic, 2) // fewer partitions than before
			recreated := time.Now()

			var pages []*record.Batch
			var firstAck time.Duration
			for p := 1; p <= 5; p++ {
				b := makeBatch(t, "dns", "acme", p, p*100, 100, 20)
				pages = append(pages, b)
				writeUntilAcked(t, s, b, recreated.Add(recoverWithin))
				if p == 1 {
					firstAck = time.Since(recreated)
				}
				// Acknowledged means in the new topic, now.
				got := byKey(t, kafkatest.ReadAll(t, c.ListenAddrs(), []string{topic}), false)
				for i := range b.Envelopes {
					if got[b.Envelopes[i].ID] == nil {
						t.Fatalf("page %d: Write returned nil but record %s is not in the recreated topic", p, b.Envelopes[i].ID)
					}
				}
			}
			t.Logf("first batch acknowledged by the recreated topic %v after its creation", firstAck.Round(time.Millisecond))
			checkAllThere(t, c, topic, pages)
		})
	}

	t.Run("writes held while the topic is gone", func(t *testing.T) {
		t.Parallel()
		c := kafkatest.NewCluster(t, kfake.SeedTopics(3, topic))
		adm := admin(t, c)
		s, _ := startSink(t, testConfig(c), stream, nil)
		write(t, s, makeBatch(t, "dns", "acme", 0, 0, 100, 20))

		deleteTopic(t, adm, topic)
		// A writer goes on, as the pipeline does, while the topic is
		// missing: its Write waits (or fails, not permanently) and
		// holds the records until the topic is back.
		var pages []*record.Batch
		acked := make([]time.Time, 7)
		done := make(chan struct{})
		go func() {
			defer close(done)
			deadline := time.Now().Add(time.Minute)
			for p := 1; p <= 6; p++ {
				b := makeBatch(t, "dns", "acme", p, p*100, 100, 20)
				if !writeUntilAckedOrReport(t, s, b, deadline) {
					return
				}
				pages = append(pages, b)
				acked[p] = time.Now()
			}
		}()
		time.Sleep(2 * time.Second)
		createTopic(t, adm, topic, 3)
		recreated := time.Now()
		<-done
		if t.Failed() {
			return
		}
		if acked[1].Before(recreated) {
			t.Fatalf("page 1 acknowledged %v before the topic came back", recreated.Sub(acked[1]))
		}
		d := acked[1].Sub(recreated)
		t.Logf("page 1, written while the topic was gone, acknowledged %v after the topic came back", d.Round(time.Millisecond))
		if d > recoverWithin {
			t.Errorf("page 1 acknowledged %v after the topic came back, want within %v", d, recoverWithin)
		}
		checkAllThere(t, c, topic, pages)
	})
}

// TestConcurrentWritesAcrossARecreationPurgeOnce: four writers, one per
// account, keep writing to one topic while it is deleted and recreated.
// The sink purges the topic once (a purge fails the records the other
// writers have buffered, which are produced again, not purged again);
// every page whose Write began after the deletion is in the new topic.
func TestConcurrentWritesAcrossARecreationPurgeOnce(t *testing.T) {
	t.Parallel()
	const topic = "svc.dns"
	accounts := []string{"acme", "beta", "gamma", "delta"}
	var streams []record.Stream
	for _, a := range accounts {
		streams = append(streams, record.Stream{Source: "dns", Account: a})
	}
	c := kafkatest.NewCluster(t, kfake.SeedTopics(4, topic))
	adm := admin(t, c)
	var logs syncBuffer
	s, err := kafka.New(testConfig(c), streams, t.TempDir(), nil, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})

	var deletedAt atomic.Int64 // unix nanos once the topic is deleted
	stop := make(chan struct{})
	var mu sync.Mutex
	var after []*record.Batch // pages whose Write began after the deletion
	var wg sync.WaitGroup
	for i, acct := range accounts {
		wg.Go(func() {
			deadline := time.Now().Add(time.Minute)
			for p := 0; ; p++ {
				select {
				case <-stop:
					return
				default:
				}
				b := makeBatch(t, "dns", acct, p, i*100_000+p*50, 50, 20)
				began := time.Now().UnixNano()
				if !writeUntilAckedOrReport(t, s, b, deadline) {
					return
				}
				if d := deletedAt.Load(); d != 0 && began > d {
					mu.Lock()
					after = append(after, b)
					mu.Unlock()
				}
			}
		})
	}
	time.Sleep(500 * time.Millisecond)
	deleteTopic(t, adm, topic)
	deletedAt.Store(time.Now().UnixNano())
	createTopic(t, adm, topic, 3)
	recreated := time.Now()
	// Until every writer has had pages acknowledged by the new topic.
	for {
		mu.Lock()
		n := len(after)
		mu.Unlock()
		if n >= 5*len(accounts) || time.Since(recreated) > recoverWithin+10*time.Second {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if t.Failed() {
		return
	}
	if len(after) < 5*len(accounts) {
		t.Fatalf("only %d pages acknowledged after the recreation", len(after))
	}
	checkAllThere(t, c, topic, after)
	if n := strings.Count(logs.String(), "kafka topic was deleted and recreated"); n != 1 {
		t.Errorf("the topic was purged %d times for one recreation, want once:\n%s", n, logs.String())
	}
}

// admin is a kadm client of c of its own, closed when the test ends.
func admin(t *testing.T, c *kfake.Cluster) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// deleteTopic deletes topic, as an operator would with kafka-topics.sh.
func deleteTopic(t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := adm.DeleteTopics(ctx, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("delete topic %s: %v", topic, err)
	}
}

// createTopic creates topic with partitions partitions.
func createTopic(t *testing.T, adm *kadm.Client, topic string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := adm.CreateTopics(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// writeUntilAcked is writeUntilAckedOrReport that stops the test on
// failure; call it from the test's goroutine only.
func writeUntilAcked(t *testing.T, s *kafka.Sink, b *record.Batch, deadline time.Time) {
	t.Helper()
	if !writeUntilAckedOrReport(t, s, b, deadline) {
		t.FailNow()
	}
}

// writeUntilAckedOrReport plays the pipeline: it writes b again after
// every failure, each Write bounded like one of the pipeline's
// (sink_timeout), until Write returns nil (true) or deadline passes. A
// permanent error or the deadline is reported with t.Errorf (false): the
// pipeline would stop the stream on a permanent error.
func writeUntilAckedOrReport(t *testing.T, s *kafka.Sink, b *record.Batch, deadline time.Time) bool {
	t.Helper()
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		err := s.Write(ctx, b)
		cancel()
		switch {
		case err == nil:
			return true
		case sink.IsPermanent(err):
			t.Errorf("page %d: Write returned a permanent error: %v", b.Page, err)
			return false
		case time.Now().After(deadline):
			t.Errorf("page %d not acknowledged in time (%d attempts); last error: %v", b.Page, attempt, err)
			return false
		}
		if attempt <= 3 || attempt%20 == 0 {
			t.Logf("page %d attempt %d: %v", b.Page, attempt, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkAllThere reads topic and checks that it holds every record of
// pages.
func checkAllThere(t *testing.T, c *kfake.Cluster, topic string, pages []*record.Batch) {
	t.Helper()
	recs := kafkatest.ReadAll(t, c.ListenAddrs(), []string{topic})
	got := byKey(t, recs, false)
	want, lost := 0, 0
	for _, b := range pages {
		for i := range b.Envelopes {
			want++
			if got[b.Envelopes[i].ID] == nil {
				lost++
				t.Errorf("page %d record %s lost", b.Page, b.Envelopes[i].ID)
			}
		}
	}
	t.Logf("%d of %d ids read back from the recreated topic (%d records)", want-lost, want, len(recs))
}
