package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/testinfra/simtest"
)

// kafkaHeaders are the headers every record of the Kafka sink carries
// (internal/sink/kafka doc.go), each exactly once.
var kafkaHeaders = []string{"source", "account", "time", "window_start", "window_end", "fetched_at", "content-type"}

// kafkaHeadersOf checks that m carries each of kafkaHeaders exactly once and no
// other, content-type application/json and times in the C7 form, and
// returns them by name.
func kafkaHeadersOf(m *kcatMessage) (map[string]string, error) {
	h := map[string]string{}
	for i := 0; i+1 < len(m.Headers); i += 2 {
		if _, dup := h[m.Headers[i]]; dup {
			return nil, fmt.Errorf("header %q twice: %q", m.Headers[i], m.Headers)
		}
		h[m.Headers[i]] = m.Headers[i+1]
	}
	if len(m.Headers)%2 != 0 || len(h) != len(kafkaHeaders) {
		return nil, fmt.Errorf("headers %q, want exactly %q", m.Headers, kafkaHeaders)
	}
	for _, k := range kafkaHeaders {
		if _, ok := h[k]; !ok {
			return nil, fmt.Errorf("header %q missing: %q", k, m.Headers)
		}
	}
	if h["content-type"] != "application/json" {
		return nil, fmt.Errorf("content-type %q", h["content-type"])
	}
	for _, k := range []string{"time", "window_start", "window_end", "fetched_at"} {
		tm, err := time.Parse(time.RFC3339Nano, h[k])
		if err != nil || record.FormatTime(tm) != h[k] {
			return nil, fmt.Errorf("header %s %q is not RFC 3339 UTC with milliseconds", k, h[k])
		}
	}
	return h, nil
}

// kafkaChecked is one record of a topic after its checks.
type kafkaChecked struct {
	id, source, account, time string
	err                       error
}

// checkEnvelopeMessage checks one record of format envelope: the value is
// an envelope whose id is the key and the C7 id of its record, the headers
// are exactly the documented ones and equal the envelope's fields, and the
// topic is the source's.
func checkEnvelopeMessage(m *kcatMessage, topicOf func(source string) string) kafkaChecked {
	where := fmt.Sprintf("%s/%d@%d", m.Topic, m.Partition, m.Offset)
	fail := func(format string, args ...any) kafkaChecked {
		return kafkaChecked{err: fmt.Errorf(where+": "+format, args...)}
	}
	if m.Key == nil || m.Value == nil {
		return fail("no key or no value")
	}
	h, err := kafkaHeadersOf(m)
	if err != nil {
		return fail("%v", err)
	}
	if want := topicOf(h["source"]); m.Topic != want {
		return fail("record of %s/%s in topic %s, want %s", h["source"], h["account"], m.Topic, want)
	}
	// Fast path: the envelope as record.Envelope.AppendJSON lays it out,
	// with exactly the key and the headers as its fields; only the record
	// is parsed (canonicalized for its id, which also proves it one JSON
	// value). Anything else takes the general path below.
	prefix := `{"id":"` + string(m.Key) + `","source":"` + h["source"] + `","account":"` + h["account"] +
		`","time":"` + h["time"] + `","window_start":"` + h["window_start"] + `","window_end":"` + h["window_end"] +
		`","fetched_at":"` + h["fetched_at"] + `","record":`
	if v := m.Value; len(v) > len(prefix) && string(v[:len(prefix)]) == prefix && v[len(v)-1] == '}' {
		if id, err := record.ID(h["source"], v[len(prefix):len(v)-1]); err != nil || id != string(m.Key) {
			return fail("key %s is not the C7 id of the envelope's record (%s, %v)", m.Key, id, err)
		}
		return kafkaChecked{id: string(m.Key), source: h["source"], account: h["account"], time: h["time"]}
	}
	var e struct {
		ID, Source, Account, Time string
		WindowStart               string          `json:"window_start"`
		WindowEnd                 string          `json:"window_end"`
		FetchedAt                 string          `json:"fetched_at"`
		Record                    json.RawMessage `json:"record"`
	}
	if err := json.Unmarshal(m.Value, &e); err != nil {
		return fail("value is not an envelope: %v: %.300s", err, m.Value)
	}
	if string(m.Key) != e.ID {
		return fail("key %q, envelope id %q", m.Key, e.ID)
	}
	if id, err := record.ID(e.Source, e.Record); err != nil || id != e.ID {
		return fail("envelope id %s is not the C7 id of its record (%s, %v)", e.ID, id, err)
	}
	for k, v := range map[string]string{"source": e.Source, "account": e.Account, "time": e.Time,
		"window_start": e.WindowStart, "window_end": e.WindowEnd, "fetched_at": e.FetchedAt} {
		if h[k] != v {
			return fail("header %s=%q, envelope %s=%q", k, h[k], k, v)
		}
	}
	return kafkaChecked{id: e.ID, source: e.Source, account: e.Account, time: e.Time}
}

// The record checks of the read-back accept an envelope in any member
// order (general path) as in the sink's own layout (fast path), and reject
// a header, key or topic that disagrees with the value.
func TestKafkaEnvelopeCheckOfTheReadBack(t *testing.T) {
	raw := []byte(`{"createdTime": "2026-11-20T10:00:00.123Z", "name": "x.example", "n": 1}`)
	id, err := record.ID("dns", raw)
	if err != nil {
		t.Fatal(err)
	}
	headers := []string{"source", "dns", "account", "acme", "time", "2026-11-20T10:00:00.123Z",
		"window_start", "2026-11-20T00:00:00.000Z", "window_end", "2026-11-21T00:00:00.000Z",
		"fetched_at", "2026-11-22T00:00:00.000Z", "content-type", "application/json"}
	sinkLayout := `{"id":"` + id + `","source":"dns","account":"acme","time":"2026-11-20T10:00:00.123Z",` +
		`"window_start":"2026-11-20T00:00:00.000Z","window_end":"2026-11-21T00:00:00.000Z","fetched_at":"2026-11-22T00:00:00.000Z","record":` + string(raw) + `}`
	reordered := `{"record":` + string(raw) + `, "account":"acme","source":"dns","id":"` + id + `","time":"2026-11-20T10:00:00.123Z",` +
		`"window_end":"2026-11-21T00:00:00.000Z","window_start":"2026-11-20T00:00:00.000Z","fetched_at":"2026-11-22T00:00:00.000Z"}`
	topicOf := func(src string) string { return "svc." + src }
	msg := func(value string, hdrs []string) *kcatMessage {
		return &kcatMessage{Topic: "svc.dns", Key: []byte(id), Value: []byte(value), Headers: hdrs}
	}
	for _, v := range []string{sinkLayout, reordered} {
		if r := checkEnvelopeMessage(msg(v, headers), topicOf); r.err != nil || r.id != id || r.account != "acme" {
			t.Errorf("valid envelope refused: %+v\n%s", r, v)
		}
	}
	badHeader := slices.Clone(headers)
	badHeader[9] = "2026-11-20T00:00:00.000Z" // window_end
	wrongKey := msg(sinkLayout, headers)
	wrongKey.Key = []byte(strings.Repeat("0", 64))
	otherTopic := msg(sinkLayout, headers)
	otherTopic.Topic = "svc.connections"
	for name, m := range map[string]*kcatMessage{
		"header": msg(sinkLayout, badHeader), "header, reordered": msg(reordered, badHeader),
		"key": wrongKey, "topic": otherTopic, "missing header": msg(sinkLayout, headers[:12]),
		"record":   msg(strings.Replace(sinkLayout, `"n": 1`, `"n": 2`, 1), headers),
		"trailing": msg(sinkLayout+" x", headers),
	} {
		if r := checkEnvelopeMessage(m, topicOf); r.err == nil {
			t.Errorf("%s: a bad record passed the checks", name)
		}
	}
}

// readEnvelopeTopics reads topics (format envelope) with kcat, checks every
// record (checkEnvelopeMessage) on GOMAXPROCS workers, and collects them.
func readEnvelopeTopics(t *testing.T, addr string, topics []string, topicOf func(source string) string) *output {
	t.Helper()
	jobs := make(chan *kcatMessage, 512)
	results := make(chan kafkaChecked, 512)
	var workers sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for m := range jobs {
				results <- checkEnvelopeMessage(m, topicOf)
			}
		}()
	}
	out := newOutput()
	var firstErr error
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for r := range results {
			if r.err != nil {
				if firstErr == nil {
					firstErr = r.err
				}
				continue
			}
			tm, err := time.Parse(time.RFC3339Nano, r.time)
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("record %s: time %q: %v", r.id, r.time, err)
			}
			k := streamKey{r.source, r.account}
			if out.ids[k] == nil {
				out.ids[k] = map[string]int{}
			}
			out.ids[k][r.id]++
			out.times[r.id] = tm
			out.total++
		}
	}()
	stop := func() { close(jobs); workers.Wait(); close(results); <-collected }
	stopped := false
	defer func() { // kcatConsume may fail the test: end the workers anyway
		if !stopped {
			stop()
		}
	}()
	kcatConsume(t, addr, topics, func(m *kcatMessage) { jobs <- m })
	stopped = true
	stop()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	return out
}

// Nine sources x two accounts, two days backfilled with --once into a
// standalone broker (a separate process, topics created by the collector);
// kcat reads every topic to its end: keys are the C7 ids of the records,
// headers agree with the values, nothing is duplicated, and the ids per
// (source, account, day) match /_truth (C7, C8).
func TestKafkaBackfillOfNineSourcesMatchesTruthReadByKcat(t *testing.T) {
	kcatBin(t)
	sim := startSim(t, nil)
	broker := startKafkaBroker(t, 0, "--data-dir", t.TempDir())
	start := time.Now().UTC().Add(-48 * time.Hour).Truncate(time.Minute)
	s := newSetup(t, sim, start, kafkaSinkYAML(broker.addr, "create_topics: true"))
	began := time.Now()
	s.runOnce(t, 5*time.Minute)
	ran := time.Since(began)

	began = time.Now()
	out := readEnvelopeTopics(t, broker.addr, kafkaTopics(allSources, "svc."), func(src string) string { return "svc." + src })
	read := time.Since(began)
	n := compareWithTruth(t, sim, out, allStreams(), start, watermarks(t, s.checkpointPath()))
	if n < 100_000 {
		t.Fatalf("only %d records compared; the test data is too thin to mean much", n)
	}
	if d := out.duplicates(); d != 0 {
		t.Errorf("%d duplicates in a clean run: the idempotent producer repeated records", d)
	}
	noKafkaDeadLetters(t, s)
	t.Logf("%d records in Kafka match truth; collector %v, kcat read and check %v", n, ran.Round(time.Millisecond), read.Round(time.Millisecond))
}

// format: record on a small scope, into topics seeded at the broker's start
// (create_topics off) named by a template with both placeholders: each
// value is the raw record (its C7 id is the key, its time field is the time
// header), the headers carry the rest, and the ids match /_truth.
func TestKafkaRecordFormatCarriesTheRawRecordAndHeaders(t *testing.T) {
	kcatBin(t)
	sim := startSim(t, nil)
	sources := []string{"dns", "audit_logs", "edge_alerts"}
	var topics []string
	for _, src := range sources {
		topics = append(topics, "raw."+src+".acme")
	}
	broker := startKafkaBroker(t, 0, "--seed-topics", strings.Join(topics, ","), "--default-partitions", "2")
	start := time.Now().UTC().Add(-12 * time.Hour).Truncate(time.Minute)
	s := newSetup(t, sim, start, kafkaSourcesYAML(start, sources)+kafkaSinkYAML(broker.addr, "format: record", "topic: raw.{source}.{account}"))
	s.env = append(s.env, "COLLECTOR_ACCOUNTS=[acme]")
	s.write(t)
	s.runOnce(t, 2*time.Minute)

	out := newOutput()
	kcatConsume(t, broker.addr, topics, func(m *kcatMessage) {
		if m.Key == nil || m.Value == nil {
			t.Fatalf("%s/%d@%d: no key or no value", m.Topic, m.Partition, m.Offset)
		}
		h, err := kafkaHeadersOf(m)
		if err != nil {
			t.Fatalf("%s/%d@%d: %v", m.Topic, m.Partition, m.Offset, err)
		}
		if want := "raw." + h["source"] + "." + h["account"]; m.Topic != want {
			t.Fatalf("record of %s/%s in topic %s, want %s", h["source"], h["account"], m.Topic, want)
		}
		value := m.Value
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(value, &obj); err != nil {
			t.Fatalf("%s/%d@%d: value is not a JSON object: %v", m.Topic, m.Partition, m.Offset, err)
		}
		spec, ok := catalog.LookupSpec(h["source"])
		if !ok {
			t.Fatalf("header source %q is no source", h["source"])
		}
		rt, err := record.ParseTime(obj[spec.TimeField])
		if err != nil || record.FormatTime(rt) != h["time"] {
			t.Fatalf("%s/%d@%d: time header %s, record %s %s (%v)", m.Topic, m.Partition, m.Offset, h["time"], spec.TimeField, obj[spec.TimeField], err)
		}
		ws, _ := time.Parse(time.RFC3339Nano, h["window_start"])
		we, _ := time.Parse(time.RFC3339Nano, h["window_end"])
		if rt.Before(ws) || !rt.Before(we) {
			t.Fatalf("%s/%d@%d: record time %s outside its window [%s, %s)", m.Topic, m.Partition, m.Offset, h["time"], h["window_start"], h["window_end"])
		}
		// The value is the record itself, not an envelope around it: the
		// key is the C7 id of the value (addDecoded checks it).
		addDecoded(t, out, string(m.Key), h["source"], h["account"], h["time"], value)
	})
	var streams []streamKey
	for _, src := range sources {
		streams = append(streams, streamKey{src, "acme"})
	}
	n := compareWithTruth(t, sim, out, streams, start, watermarks(t, s.checkpointPath()))
	if n < 1000 {
		t.Fatalf("only %d records: too few to mean much", n)
	}
	if d := out.duplicates(); d != 0 {
		t.Errorf("%d duplicates in a clean run", d)
	}
	noKafkaDeadLetters(t, s)
	t.Logf("%d raw records match truth", n)
}

// kafkaSourcesYAML enables only sources, from start with a lag of 2m.
func kafkaSourcesYAML(start time.Time, sources []string) string {
	y := fmt.Sprintf("sources:\n  default:\n    enabled: false\n    start: %s\n    lag: 2m\n", start.Format(time.RFC3339))
	for _, src := range sources {
		y += "  " + src + ": {enabled: true}\n"
	}
	return y
}

func kafkaStreams(sources []string) []streamKey {
	var out []streamKey
	for _, src := range sources {
		for _, a := range accounts {
			out = append(out, streamKey{src, a})
		}
	}
	return out
}

// The broker goes down twice in the middle of a backfill and comes back a
// few seconds later on the same port and data directory: first stopped
// (SIGTERM, at a fifth of the backfill), then killed (SIGKILL, past half of
// it). While it is down the collector keeps retrying: it neither exits nor
// acknowledges anything (its live /state does not move). What it had taken
// as acknowledged when the broker went down is in the broker's data
// directory: a second broker on that directory, on a port the collector does
// not know, serves it to kcat, and it matches /_truth up to the
// acknowledged watermarks. Finally the collector finishes and Kafka holds
// everything up to each committed watermark.
func TestKafkaBrokerRestartMidBackfillNeverCommitsAheadOfTheBroker(t *testing.T) {
	kcatBin(t)
	// Slow pages stretch the backfill in time, not in records.
	sim := startSim(t, func(c *apisim.Config) {
		c.PageSize = 500
		c.SlowRate = 1
		c.SlowDelay = 200 * time.Millisecond
	})
	sources := []string{"dns", "connections", "cloud_activities", "edge_audit_events"}
	topics := kafkaTopics(sources, "svc.")
	topicOf := func(src string) string { return "svc." + src }
	dataDir := t.TempDir()
	port := lowFreePort(t)
	broker := startKafkaBroker(t, port, "--data-dir", dataDir)
	start := time.Now().UTC().Add(-12 * time.Hour).Truncate(time.Minute)
	s := newSetup(t, sim, start, kafkaSourcesYAML(start, sources)+kafkaSinkYAML(broker.addr, "create_topics: true"))
	s.metrics = freeAddr(t)
	s.env = append(s.env, "COLLECTOR_API__PAGE_ROWS=500", "COLLECTOR_PIPELINE__BUFFER_RECORDS=5000")
	s.write(t)
	var expected int64
	for _, k := range kafkaStreams(sources) {
		n, _ := sim.Truth(k.source, k.account, start, time.Now().Add(-2*time.Minute))
		expected += n
	}

	p := s.startCollector(t, "--once")
	outage := func(percent int64, kill bool) string {
		t.Helper()
		how := "stopped"
		if kill {
			how = "killed"
		}
		deadline := time.Now().Add(time.Minute)
		for st := readLiveState(s.metrics); sumDelivered(st) < expected*percent/100; st = readLiveState(s.metrics) {
			select {
			case err := <-p.done:
				t.Fatalf("collector exited (%v) before %d%% of the backfill was delivered\n%s", err, percent, tail(p.logs.String(), 20))
			case <-time.After(50 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d%% of %d records not delivered within a minute\n%s", percent, expected, tail(p.logs.String(), 20))
			}
		}
		if kill {
			broker.cmd.Process.Kill()
			broker.exitErr()
		} else {
			broker.stop()
			if err := broker.exitErr(); err != nil {
				t.Fatalf("broker did not stop cleanly: %v\n%s", err, broker.logs.String())
			}
		}
		downAt := time.Now()
		// Answers the broker sent before it went down may still be on their way.
		time.Sleep(time.Second)
		before := readLiveState(s.metrics)
		if before == nil {
			t.Fatalf("no /state\n%s", tail(p.logs.String(), 20))
		}
		if sumDelivered(before) >= expected {
			t.Fatalf("all %d records were delivered before the broker %s: the test proves nothing", expected, how)
		}
		ckpt := func() string {
			fi, err := os.Stat(s.checkpointPath())
			if err != nil {
				t.Fatal(err)
			}
			return fmt.Sprint(fi.ModTime().UnixNano(), fi.Size())
		}
		ckptBefore, emptyWindows := ckpt(), false

		// Down for a few seconds: the collector waits and acknowledges nothing.
		polls, moved := 0, map[streamKey]bool{}
		for time.Since(downAt) < 4*time.Second {
			select {
			case err := <-p.done:
				t.Fatalf("collector exited (%v) while the broker was %s\n%s", err, how, tail(p.logs.String(), 20))
			case <-time.After(250 * time.Millisecond):
			}
			now := readLiveState(s.metrics)
			if now == nil {
				t.Fatalf("no /state while the broker is down\n%s", tail(p.logs.String(), 20))
			}
			for k, b := range before {
				a := now[k]
				if moved[k] || a.Watermark.Equal(b.Watermark) && a.Delivered == b.Delivered {
					continue
				}
				// Only a window without records may pass without the sink.
				if a.Delivered == b.Delivered && a.Watermark.After(b.Watermark) && !b.Watermark.IsZero() {
					if n, _ := sim.Truth(k.source, k.account, b.Watermark, a.Watermark); n == 0 {
						before[k], emptyWindows = a, true
						continue
					}
				}
				moved[k] = true
				t.Errorf("%s/%s moved while the broker was %s: watermark %s -> %s, delivered %d -> %d",
					k.source, k.account, how, b.Watermark.Format(time.RFC3339), a.Watermark.Format(time.RFC3339), b.Delivered, a.Delivered)
			}
			// Nothing to commit: the checkpoint file is not written.
			if c := ckpt(); c != ckptBefore && !emptyWindows && !moved[streamKey{}] {
				moved[streamKey{}] = true
				t.Errorf("the checkpoint file was written while the broker was %s", how)
			}
			polls++
		}

		// Everything the collector took as acknowledged is on the broker's
		// disk: read the data directory with a second broker on another port.
		acked, ackedStreams := liveWatermarks(before, start)
		if len(ackedStreams) == 0 {
			t.Fatalf("no stream had a watermark when the broker was %s", how)
		}
		inspect := startKafkaBroker(t, 0, "--data-dir", dataDir)
		atStop := readEnvelopeTopics(t, inspect.addr, topics, topicOf)
		nAcked := compareWithTruth(t, sim, atStop, ackedStreams, start, acked)
		// rows_delivered also counts the acknowledged pages of the window in
		// flight, which the checkpoint resumes after (its next-page URL) and
		// the watermark does not cover yet: every one must be on disk too.
		for k, b := range before {
			var onDisk int64
			for _, c := range atStop.ids[k] {
				onDisk += int64(c)
			}
			if onDisk < b.Delivered {
				t.Errorf("%s/%s: %d records acknowledged when the broker was %s, %d on its disk", k.source, k.account, b.Delivered, how, onDisk)
			}
		}
		inspect.stop()
		if err := inspect.exitErr(); err != nil {
			t.Fatalf("inspection broker: %v\n%s", err, inspect.logs.String())
		}
		downFor := time.Since(downAt)
		// Back on the same port and directory.
		broker = startKafkaBroker(t, port, "--data-dir", dataDir)
		return fmt.Sprintf("%s for %v at %d of %d records (%d polls of /state; all on disk, %d of them below the acknowledged watermarks)",
			how, downFor.Round(time.Millisecond), sumDelivered(before), expected, polls, nAcked)
	}
	first := outage(20, false)
	second := outage(55, true)
	if err := p.wait(t, 2*time.Minute); err != nil {
		t.Fatalf("collector --once failed after the broker came back: %v\n%s", err, tail(p.logs.String(), 30))
	}
	out := readEnvelopeTopics(t, broker.addr, topics, topicOf)
	n := compareWithTruth(t, sim, out, kafkaStreams(sources), start, watermarks(t, s.checkpointPath()))
	noKafkaDeadLetters(t, s)
	t.Logf("broker %s; then %s; %d records complete, %d duplicates", first, second, n, out.duplicates())
}

// SIGKILL the collector 8 times at random moments of a Kafka backfill,
// restarting each time: finally complete per truth, duplicates (from
// batches produced and not yet committed) bounded by what was in flight.
func TestKafkaCrashesMidBackfillLoseNothing(t *testing.T) {
	kcatBin(t)
	sim := startSim(t, func(c *apisim.Config) {
		c.PageSize = 250
		c.SlowRate = 1
		c.SlowDelay = 300 * time.Millisecond
	})
	broker := startKafkaBroker(t, 0, "--data-dir", t.TempDir())
	start := time.Now().UTC().Add(-8 * time.Hour).Truncate(time.Minute)
	s := newSetup(t, sim, start, kafkaSinkYAML(broker.addr, "create_topics: true"))
	const buffer = 5000
	s.env = append(s.env, "COLLECTOR_API__PAGE_ROWS=250", fmt.Sprintf("COLLECTOR_PIPELINE__BUFFER_RECORDS=%d", buffer))
	s.write(t)
	rng := rand.New(rand.NewPCG(8, 8))
	const kills = 8
	for i := range kills {
		p := s.startCollector(t, "--once")
		select {
		case err := <-p.done:
			t.Fatalf("run %d ended by itself before the kill (%v): backfill too small for the test\n%s", i, err, tail(p.logs.String(), 20))
		case <-time.After(time.Duration(300+rng.IntN(600)) * time.Millisecond):
		}
		p.kill()
	}
	var committed int64
	for _, st := range watermarks(t, s.checkpointPath()) {
		committed += st.Delivered
	}
	if committed == 0 {
		t.Fatalf("nothing was committed in %d killed runs: the kills never hit a backfill in progress", kills)
	}
	s.runOnce(t, 3*time.Minute)
	out := readEnvelopeTopics(t, broker.addr, kafkaTopics(allSources, "svc."), func(src string) string { return "svc." + src })
	n := compareWithTruth(t, sim, out, allStreams(), start, watermarks(t, s.checkpointPath()))
	dup := out.duplicates()
	if limit := kills * 2 * buffer; dup > limit {
		t.Errorf("%d duplicates after %d kills: more than the batches in flight (%d)", dup, kills, limit)
	}
	noKafkaDeadLetters(t, s)
	t.Logf("%d records complete after %d SIGKILLs (%d committed before the last run); %d duplicates", n, kills, committed, dup)
}

// kafkaBenchVariant is one sink configuration of BenchmarkKafkaSinkEndToEnd.
type kafkaBenchVariant struct {
	name string
	sink func(brokerAddr, outDir string) string // sink section; brokerAddr "" for no broker
	env  []string
	dev  bool // stdout into /dev/null
}

// BenchmarkKafkaSinkEndToEnd runs the collector binary "run --once" over a
// fixed backlog (about 600,000 records of three dense sources, one account,
// a rate limit that never binds) from the simulator into: the standalone
// broker (cmd/kafkabroker, kfake in memory, over loopback) with the default
// sink settings, with a tuned linger/batching, and without compression; the
// file sink (fsync on, the default); and stdout into /dev/null, the cost of
// fetching, decoding and enveloping without a sink. It reports rows/s of
// wall time, the collector process's CPU-seconds per million records and
// records per CPU-second (records per second per core), plus the broker's
// and the simulator's CPU per million records. Run it with
//
//	go test -run '^$' -bench KafkaSinkEndToEnd -benchtime 1x ./internal/e2e/
func BenchmarkKafkaSinkEndToEnd(b *testing.B) {
	kafkaSink := func(extra ...string) func(addr, _ string) string {
		return func(addr, _ string) string {
			return kafkaSinkYAML(addr, append([]string{"create_topics: true"}, extra...)...)
		}
	}
	variants := []kafkaBenchVariant{
		{name: "kafka-default", sink: kafkaSink()},
		{name: "kafka-tuned", sink: kafkaSink("linger: 50ms", "max_buffered_records: 200000"),
			env: []string{"COLLECTOR_PIPELINE__SINK_WORKERS=8", "COLLECTOR_PIPELINE__BUFFER_RECORDS=100000"}},
		{name: "kafka-uncompressed", sink: kafkaSink("compression: none")},
		{name: "file-fsync", sink: func(_, dir string) string {
			return "sink:\n  type: file\n  file:\n    dir: " + dir + "\n    fsync: true\n"
		}},
		{name: "stdout-devnull", sink: func(_, _ string) string { return "sink:\n  type: stdout\n" }, dev: true},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			var rows int64
			var wall, cpu, brokerCPU, simCPU time.Duration
			for range b.N {
				r := kafkaBenchOnce(b, v)
				rows += r.rows
				wall += r.wall
				cpu += r.cpu
				brokerCPU += r.brokerCPU
				simCPU += r.simCPU
			}
			mrows := float64(rows) / 1e6
			b.ReportMetric(float64(rows)/wall.Seconds(), "rows/s")
			b.ReportMetric(cpu.Seconds()/mrows, "collector-cpu-s/Mrows")
			b.ReportMetric(float64(rows)/cpu.Seconds(), "rows/cpu-s")
			if brokerCPU > 0 {
				b.ReportMetric(brokerCPU.Seconds()/mrows, "broker-cpu-s/Mrows")
			}
			b.ReportMetric(simCPU.Seconds()/mrows, "sim-cpu-s/Mrows")
			b.ReportMetric(float64(rows)/float64(b.N), "rows/op")
		})
	}
}

type kafkaBenchResult struct {
	rows                         int64
	wall, cpu, brokerCPU, simCPU time.Duration
}

// kafkaBenchOnce runs one backfill of the benchmark with a fresh simulator
// (and broker) and checks that every record of the backlog arrived.
func kafkaBenchOnce(b *testing.B, v kafkaBenchVariant) kafkaBenchResult {
	b.StopTimer()
	sim := simtest.Start(b, benchSimConfig)
	defer sim.Close()
	sources := []string{"connections", "dns", "changed_files"}
	dir := b.TempDir()
	var broker *kafkaBroker
	addr := ""
	if strings.HasPrefix(v.name, "kafka") {
		broker = startKafkaBroker(b, 0) // in memory: the collector's cost, not a disk's
		addr = broker.addr
	}
	// 150,000 records an hour: 4 hours are 600,000.
	start := time.Now().UTC().Add(-4*time.Hour - 2*time.Minute).Truncate(time.Minute)
	end := start.Add(4 * time.Hour)
	conf := fmt.Sprintf(`api:
  base_url: %s
  key_id: sim-key
  rate:
    limit: 100000
accounts: [acme]
checkpoint:
  path: %s
log:
  format: json
  level: warn
metrics:
  listen: ""
%s%s`, sim.URL(), filepath.Join(dir, "data", "checkpoint.db"), kafkaSourcesYAML(start, sources), v.sink(addr, filepath.Join(dir, "out")))
	path := filepath.Join(dir, "collector.yaml")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, collectorBin, "run", "--once", "--config", path)
	cmd.Env = append(append(os.Environ(), "COLLECTOR_API__SECRET=sim-secret"), v.env...)
	var logs simtest.SyncBuffer
	cmd.Stderr = &logs
	cmd.Stdout = &logs
	if v.dev {
		devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer devNull.Close()
		cmd.Stdout = devNull
	}
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.StartTimer()
	t0 := time.Now()
	err := cmd.Run()
	wall := time.Since(t0)
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	if err != nil {
		b.Fatalf("collector: %v\n%s", err, tail(logs.String(), 20))
	}
	var want int64
	for _, src := range sources {
		n, _ := sim.Truth(src, "acme", start, end)
		want += n
	}
	var got int64
	switch {
	case broker != nil:
		for _, parts := range kafkaEndOffsets(b, broker.addr, kafkaTopics(sources, "svc.")) {
			for _, end := range parts {
				got += end
			}
		}
	case v.dev:
		got = want // nothing to count; the collector's exit status says it delivered
	default:
		got = countLines(b, filepath.Join(dir, "out"))
	}
	if got < want {
		b.Fatalf("%s: %d records delivered, the backlog holds %d", v.name, got, want)
	}
	r := kafkaBenchResult{rows: got, wall: wall, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(),
		simCPU: time.Duration(syscall.TimevalToNsec(ru1.Utime) - syscall.TimevalToNsec(ru0.Utime) +
			syscall.TimevalToNsec(ru1.Stime) - syscall.TimevalToNsec(ru0.Stime))}
	if broker != nil {
		broker.stop()
		r.brokerCPU = broker.cmd.ProcessState.UserTime() + broker.cmd.ProcessState.SystemTime()
	}
	return r
}

// countLines counts the newline-terminated lines of every file under dir.
func countLines(b *testing.B, dir string) int64 {
	var n int64
	buf := make([]byte, 1<<20)
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		for {
			k, err := f.Read(buf)
			n += int64(bytes.Count(buf[:k], []byte{'\n'}))
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}
