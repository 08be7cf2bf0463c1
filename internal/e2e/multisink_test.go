package e2e

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/sinkhelper"
	"github.com/svcexport/collector/internal/testinfra/chtest"
	"github.com/svcexport/collector/internal/testinfra/harness"
	"github.com/svcexport/collector/internal/testinfra/harness/chharness"
	"github.com/svcexport/collector/internal/testinfra/harness/kafkaharness"
)

// Several sinks from one budget: one collector binary against the
// simulator feeds the standalone Kafka broker ("siem"), a real ClickHouse
// ("lake") and the file sink ("archive") at once, and each of them alone
// is complete per /_truth (C7, C8).

// threeSinks is the configuration of the three sinks: the broker at
// kafkaAddr, database db on srv over the native protocol, files under dir,
// and the pipeline (buffer records, 8 workers per sink).
func threeSinks(kafkaAddr string, srv *chtest.Server, db, dir string, buffer int) string {
	return fmt.Sprintf(`sinks:
  - name: siem
    type: kafka
    kafka:
      brokers: [%s]
      create_topics: true
  - name: lake
    type: clickhouse
    clickhouse:
      addr: [%s]
      protocol: native
      database: %s
  - name: archive
    type: file
    file:
      dir: %s
pipeline:
  sink_workers: 8
  buffer_records: %d
`, kafkaAddr, chharness.Addr(srv, "native"), db, dir, buffer)
}

// compareAllSinks reads the three sinks back and compares each with
// /_truth up to the committed watermarks; it returns the records of each
// and the duplicates of Kafka and the files (ClickHouse's are merged by
// FINAL; exact asks for none there either).
func compareAllSinks(t *testing.T, c *harness.Collector, sim *apisim.Server, srv *chtest.Server, broker *kafkaharness.Broker,
	db, dir string, sources []string, exact bool) (kafkaN, chN, fileN int64, kafkaDup, fileDup int) {
	t.Helper()
	streams := harness.Streams(sources, c.Config().Accounts)
	kout := kafkaharness.ReadEnvelopeTopics(t, broker.Addr, kafkaharness.Topics(sources, "svc."), svcTopic)
	kafkaN = c.Compare(t, kout, streams)
	fout := harness.ReadFileSink(t, dir)
	fileN = c.Compare(t, fout, streams)
	res := chharness.Verify(t, srv, chharness.Open(t, srv), sim, db, chharness.VerifyOpts{
		From: c.Config().Start, Wms: c.Watermarks(t), Streams: streams, ExactRows: exact,
	})
	for _, name := range []string{sinkhelper.DeadLetterFile, sinkhelper.DeadLetterFileOf("siem", "kafka")} {
		if b, err := os.ReadFile(filepath.Join(filepath.Dir(c.CheckpointPath()), name)); err == nil {
			t.Errorf("dead letters written to %s (%d bytes): %.500s", name, len(b), b)
		}
	}
	return kafkaN, res.Distinct, fileN, kout.Duplicates(), fout.Duplicates()
}

// A bad sinks list exits 2 with one line naming the key path of the entry
// (by index) or the keys in conflict.
func TestMultiSinkBadConfigurationsExit2NamingTheKey(t *testing.T) {
	t.Parallel()
	base := "api:\n  base_url: http://127.0.0.1:1\n  key_id: k\n  secret: s\n"
	for _, c := range []struct{ name, yaml, want string }{
		{"sinks that is no list", "sinks:\n  type: file\n", "config: sinks: must be a list of sinks"},
		{"a bad entry", "sinks:\n  - {name: lake, type: stdout}\n  - {name: siem, type: kafka}\n", "config: sinks[1].kafka.brokers: "},
		{"an unknown key of an entry", "sinks:\n  - {type: kafka, kafka: {brokerz: [k:9092]}}\n", `config: sinks[0].kafka.brokerz: unknown key (did you mean "brokers"?)`},
		{"sink and sinks together", "sink: {type: file}\nsinks: [{type: stdout}]\n", "config: sinks: set together with sink"},
		{"one name twice", "sinks:\n  - {name: a, type: stdout}\n  - {name: a, type: file}\n", `config: sinks[1].name: "a" is the name of sinks[0] too`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(p, []byte(base+c.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out := harness.RunCLI(t, nil, "run", "--config", p)
			if code != 2 || !strings.Contains(out, c.want) || strings.Count(strings.TrimSpace(out), "\n") > 2 {
				t.Fatalf("exit %d, output:\n%s\nwant exit 2 and a short message with %q", code, out, c.want)
			}
		})
	}
}

// A ClickHouse entry of the list whose cluster the server does not know
// cannot start: the collector keeps trying (the cluster may be added to
// the server's configuration), and /readyz and the log name the key of
// that entry, sinks[1].clickhouse.cluster, not the one-sink section's.
func TestMultiSinkAStartErrorNamesTheKeyOfItsEntry(t *testing.T) {
	t.Parallel()
	srv := chtest.Get(t)
	db := srv.NewDatabase(t)
	sim := harness.StartSim(t, harness.QuickRates)
	sinks := fmt.Sprintf(`sinks:
  - name: archive
    type: file
    file:
      dir: %s
  - name: lake
    type: clickhouse
    clickhouse:
      addr: [%s]
      database: %s
      cluster: no_such_cluster
`, filepath.Join(t.TempDir(), "archive"), chharness.Addr(srv, "native"), db)
	c := harness.New(t, harness.Config{Sim: sim, Start: time.Now().UTC().Add(-time.Hour).Truncate(time.Minute),
		Sink: sinks, Metrics: harness.FreeAddr(t)})
	p := c.Start(t)
	const want = `sinks[1].clickhouse.cluster: the server does not know cluster "no_such_cluster"`
	deadline := time.Now().Add(time.Minute)
	for {
		code, checks := harness.Ready(c.Config().Metrics)
		if code == http.StatusServiceUnavailable && strings.Contains(fmt.Sprint(checks), want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never named %q: %d %v\n%s", want, code, checks, p.Tail(20))
		}
		time.Sleep(200 * time.Millisecond)
	}
	// A stop while a sink waits for its destination is a clean stop.
	if err := p.Stop(30 * time.Second); err != nil {
		t.Errorf("SIGTERM while the sink waited: %v, want exit 0\n%s", err, p.Tail(10))
	}
	logs := p.Logs()
	if !strings.Contains(logs, "sinks[1].clickhouse.cluster: the server does not know cluster") || strings.Contains(logs, "sink.clickhouse.cluster") {
		t.Errorf("the log should name %s and never the one-sink key:\n%s", "sinks[1].clickhouse.cluster", logs)
	}
}

// One run --once of nine sources and two accounts into Kafka, ClickHouse
// and files: each is complete and exact per /_truth on its own, nothing is
// repeated in a clean run, collector check checks every sink by name, and
// the startup log names them.
func TestMultiSinkKafkaClickHouseAndFileEachGetEveryRecord(t *testing.T) {
	t.Parallel()
	kafkaharness.KcatBin(t)
	srv := chtest.Get(t)
	db := srv.NewDatabase(t)
	sim := harness.StartSim(t, harness.QuickRates)
	broker := kafkaharness.StartBroker(t, 0, "--data-dir", t.TempDir())
	start := time.Now().UTC().Add(-8 * time.Hour).Truncate(time.Minute)
	dir := filepath.Join(t.TempDir(), "archive")
	c := harness.New(t, harness.Config{Sim: sim, Start: start, Sink: threeSinks(broker.Addr, srv, db, dir, 50_000)})

	code, out := c.CLI(t, nil, "check")
	for _, want := range []string{"ok    sink siem (kafka)", "ok    sink lake (clickhouse)", "ok    sink archive (file)"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("collector check exited %d without %q:\n%s", code, want, out)
		}
	}
	restarts := srv.Restarts()
	run := c.RunOnce(t, 4*time.Minute)
	read := time.Now()
	if !strings.Contains(run.Logs, `"sinks":"siem (kafka), lake (clickhouse), archive (file)"`) {
		t.Errorf("the startup log does not name the three sinks:\n%s", harness.Tail(run.Logs, 40))
	}
	chharness.NoFailedWrites(t, srv, restarts, run.Logs, "sink write failed")
	kafkaN, chN, fileN, kdup, fdup := compareAllSinks(t, c, sim, srv, broker, db, dir, harness.AllSources(), true)
	if kafkaN < 15_000 || kafkaN != chN || kafkaN != fileN {
		t.Fatalf("records compared: Kafka %d, ClickHouse %d, files %d; want the same, and enough to mean something", kafkaN, chN, fileN)
	}
	if kdup != 0 || fdup != 0 {
		t.Errorf("duplicates in a clean run: Kafka %d, files %d", kdup, fdup)
	}
	t.Logf("%d records in each of Kafka, ClickHouse and the files match truth; run %v wall, %v CPU; read back and compared in %v",
		kafkaN, run.Wall.Round(time.Millisecond), run.CPU().Round(time.Millisecond), time.Since(read).Round(time.Millisecond))
}

// The Kafka broker stops at a fifth of a backfill into three sinks and
// comes back a few seconds later on the same port and data directory.
// While it is down the other two sinks are held back, not left to run
// ahead without bound: the files stop growing within two buffers of what
// every sink acknowledged, nothing is acknowledged (the live /state does
// not move), /state shows records pending for siem alone and /readyz names
// sink:siem. Finally each sink is complete per /_truth: nothing lost in
// any of them.
func TestMultiSinkABrokerOutageHoldsTheOtherSinksAndLosesNothing(t *testing.T) {
	t.Parallel()
	kafkaharness.KcatBin(t)
	srv := chtest.Get(t)
	db := srv.NewDatabase(t)
	// Slow pages stretch the backfill in time, not in records.
	sim := harness.StartSim(t, harness.QuickRates, func(c *apisim.Config) {
		c.PageSize = 500
		c.SlowRate = 1
		c.SlowDelay = 200 * time.Millisecond
	})
	sources := []string{"dns", "connections", "cloud_activities", "edge_audit_events"}
	dataDir := t.TempDir()
	port := harness.LowFreePort(t)
	broker := kafkaharness.StartBroker(t, port, "--data-dir", dataDir)
	start := time.Now().UTC().Add(-12 * time.Hour).Truncate(time.Minute)
	dir := filepath.Join(t.TempDir(), "archive")
	const buffer = 5000
	c := harness.New(t, harness.Config{Sim: sim, Start: start, Sources: sources, Interval: harness.Omit, PageRows: 500,
		Sink: threeSinks(broker.Addr, srv, db, dir, buffer), Metrics: harness.FreeAddr(t)})
	metrics := c.Config().Metrics
	var expected int64
	for _, k := range harness.Streams(sources, harness.Accounts()) {
		n, _ := sim.Truth(k.Source, k.Account, start, time.Now().Add(-2*time.Minute))
		expected += n
	}

	p := c.Start(t, "--once")
	deadline := time.Now().Add(time.Minute)
	for harness.SumDelivered(harness.LiveState(metrics)) < expected/5 {
		select {
		case <-p.Exited():
			t.Fatalf("collector exited (%v) before a fifth of the backfill was delivered\n%s", p.Err(), p.Tail(20))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("a fifth of %d records not delivered within a minute\n%s", expected, p.Tail(20))
		}
	}
	if err := broker.Stop(); err != nil {
		t.Fatalf("broker did not stop cleanly: %v\n%s", err, broker.Logs())
	}
	downAt := time.Now()
	time.Sleep(2 * time.Second) // answers already on their way arrive; the buffer fills
	before := harness.LiveState(metrics)
	if harness.SumDelivered(before) >= expected {
		t.Fatalf("all %d records were delivered before the broker stopped: the test proves nothing", expected)
	}
	acked := harness.SumDelivered(before)
	linesBefore := harness.CountLines(t, dir)

	sinkDown, pendingSeen := false, map[string]int64{}
	for time.Since(downAt) < 6*time.Second {
		select {
		case <-p.Exited():
			t.Fatalf("collector exited (%v) while the broker was down\n%s", p.Err(), p.Tail(20))
		case <-time.After(250 * time.Millisecond):
		}
		if code, ch := harness.Ready(metrics); code == http.StatusServiceUnavailable && ch["sink:siem"] != "" && ch["sink:siem"] != "ok" {
			sinkDown = true
			for name, msg := range ch {
				if strings.HasPrefix(name, "sink") && name != "sink:siem" && name != "sink_write:siem" && msg != "" && msg != "ok" {
					t.Errorf("/readyz blames %s (%q) while only the broker is down", name, msg)
				}
			}
		}
		now := harness.LiveState(metrics)
		for k, b := range before {
			a := now[k]
			// Only a window without records may pass without the sinks.
			if a.Delivered != b.Delivered {
				t.Fatalf("%s/%s: delivered moved from %d to %d while the broker was down", k.Source, k.Account, b.Delivered, a.Delivered)
			}
		}
		for name, n := range harness.SinkPending(now) {
			pendingSeen[name] = max(pendingSeen[name], n)
		}
	}
	linesDuring := harness.CountLines(t, dir)
	time.Sleep(2 * time.Second)
	linesLater := harness.CountLines(t, dir)
	if linesLater != linesDuring {
		t.Errorf("the file sink went on from %d to %d lines while Kafka was down: it is not held back", linesDuring, linesLater)
	}
	// What the files hold beyond what every sink acknowledged: the pages
	// Kafka had not acknowledged when it went down and those handed on
	// since, all inside the buffer.
	if ahead := linesLater - acked; ahead > 2*buffer {
		t.Errorf("the file sink ran %d records ahead of what every sink acknowledged; the buffer holds %d", ahead, buffer)
	}
	if !sinkDown {
		t.Errorf("/readyz never named sink:siem while the broker was down")
	}
	if pendingSeen["siem"] == 0 || pendingSeen["siem"] > buffer {
		t.Errorf("/state showed at most %d records pending for siem while the broker was down, want some, at most the buffer (%d)", pendingSeen["siem"], buffer)
	}
	if pendingSeen["lake"] > 0 && pendingSeen["lake"] >= pendingSeen["siem"] {
		t.Errorf("/state: lake had %d pending, siem %d: the sink that is down should hold the most", pendingSeen["lake"], pendingSeen["siem"])
	}
	downFor := time.Since(downAt)

	broker = kafkaharness.StartBroker(t, port, "--data-dir", dataDir)
	if err := p.Wait(t, 3*time.Minute); err != nil {
		t.Fatalf("collector --once failed after the broker came back: %v\n%s", err, p.Tail(30))
	}
	kafkaN, chN, fileN, kdup, fdup := compareAllSinks(t, c, sim, srv, broker, db, dir, sources, false)
	if kafkaN != chN || kafkaN != fileN {
		t.Errorf("records compared: Kafka %d, ClickHouse %d, files %d; want the same", kafkaN, chN, fileN)
	}
	t.Logf("broker down %v at %d of %d records; files %d -> %d lines meanwhile (held back); pending seen %v; then %d records complete in each sink (duplicates: Kafka %d, files %d)",
		downFor.Round(time.Millisecond), acked, expected, linesBefore, linesLater, pendingSeen, kafkaN, kdup, fdup)
}

// SIGKILL the collector at random moments of a backfill into three sinks,
// restarting each time, then a final run: each sink is complete per
// /_truth and holds every record once.
func TestMultiSinkCrashesMidBackfillLoseNothingInAnySink(t *testing.T) {
	t.Parallel()
	kafkaharness.KcatBin(t)
	// A server of its own: a collector killed in the middle of a native
	// insert can make the test server abort (see
	// TestClickHouseSIGKILLsDuringBackfillLoseNothing). chtest restarts it
	// and the collector repeats the insert, but the crash must not cut the
	// queries of the tests sharing the package's server.
	srv := chtest.Start(t)
	db := srv.NewDatabase(t)
	sim := harness.StartSim(t, harness.QuickRates, func(c *apisim.Config) {
		c.PageSize = 250
		c.SlowRate = 1
		c.SlowDelay = 300 * time.Millisecond
	})
	broker := kafkaharness.StartBroker(t, 0, "--data-dir", t.TempDir())
	sources := []string{"dns", "connections", "cloud_activities", "edge_audit_events"}
	start := time.Now().UTC().Add(-12 * time.Hour).Truncate(time.Minute)
	dir := filepath.Join(t.TempDir(), "archive")
	const buffer = 5000
	c := harness.New(t, harness.Config{Sim: sim, Start: start, Sources: sources, PageRows: 250, Sink: threeSinks(broker.Addr, srv, db, dir, buffer),
		Metrics: harness.FreeAddr(t)})
	const kills = 6
	// Past the start of the three sinks (tables, topics) and the first
	// acknowledgements, which wait for a ClickHouse insert (up to its 1 s
	// flush interval).
	committed := c.KillRuns(t, kills, rand.New(rand.NewPCG(9, 9)), 1500*time.Millisecond, 1500*time.Millisecond)
	c.RunOnce(t, 3*time.Minute)
	// exact: ClickHouse's count() without FINAL equals its distinct ids.
	kafkaN, chN, fileN, kdup, fdup := compareAllSinks(t, c, sim, srv, broker, db, dir, sources, true)
	if kafkaN != chN || kafkaN != fileN {
		t.Errorf("records compared: Kafka %d, ClickHouse %d, files %d; want the same", kafkaN, chN, fileN)
	}
	// Each sink once (issue 22), whatever the others had stored at a kill.
	for name, dup := range map[string]int{"Kafka": kdup, "files": fdup} {
		if dup != 0 {
			t.Errorf("%s: %d duplicates after %d kills", name, dup, kills)
		}
	}
	t.Logf("%d records complete in each sink after %d SIGKILLs (%d committed before the last run); duplicates: Kafka %d, files %d",
		kafkaN, kills, committed, kdup, fdup)
}

// Three sinks, one of them stalled (stdout into a pipe nobody reads, the
// others two file sinks), over a backlog of millions of records at the
// default buffer: the stalled sink holds the file sinks back (they stop
// within the buffer of what every sink acknowledged), nothing is
// acknowledged, and memory stays bounded and flat.
func TestMultiSinkAStalledSinkHoldsTheOthersWithinBoundedMemory(t *testing.T) {
	t.Parallel()
	pr, pw, err := os.Pipe() // never read: the stdout sink stalls once the pipe is full
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	sim := harness.StartSim(t, harness.QuickRates, func(c *apisim.Config) { c.Rates = map[string]float64{"dns": 40_000, "connections": 40_000} })
	start := time.Now().UTC().Add(-72 * time.Hour).Truncate(time.Minute)
	out := t.TempDir()
	const buffer = 20_000 // the default
	sinks := fmt.Sprintf(`sinks:
  - {name: a, type: file, file: {dir: %s, fsync: false}}
  - {name: b, type: file, file: {dir: %s, fsync: false}}
  - {name: tap, type: stdout}
pipeline:
  buffer_records: %d
`, filepath.Join(out, "a"), filepath.Join(out, "b"), buffer)
	c := harness.New(t, harness.Config{Sim: sim, Start: start, Sources: []string{"dns", "connections"}, Sink: sinks, Stdout: pw,
		Metrics: harness.FreeAddr(t)})
	p := c.Start(t)
	defer p.Kill()
	metrics := c.Config().Metrics
	harness.WaitState(t, p, metrics, 30*time.Second, func(st map[record.Stream]harness.LiveStream) (bool, string) {
		return st != nil, "/state does not answer"
	})
	// The pipe and the buffer fill: wait until file sink a stops growing
	// (on a loaded machine that takes longer than on a quiet one).
	for last, deadline := int64(-1), time.Now().Add(90*time.Second); ; {
		time.Sleep(time.Second)
		n := harness.CountLines(t, filepath.Join(out, "a"))
		if n > 0 && n == last {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("file sink a never stopped growing (%d lines): the stalled sink does not hold it back\n%s", n, p.Tail(20))
		}
		last = n
	}
	mem := func() harness.ProcMem {
		m, err := harness.ReadProcMem(p.PID())
		if err != nil {
			t.Fatalf("%v\n%s", err, p.Tail(20))
		}
		return m
	}
	first, m1, lines1 := harness.LiveState(metrics), mem(), harness.CountLines(t, filepath.Join(out, "a"))
	time.Sleep(4 * time.Second)
	second, m2, lines2 := harness.LiveState(metrics), mem(), harness.CountLines(t, filepath.Join(out, "a"))
	if first == nil || second == nil {
		t.Fatalf("no /state\n%s", p.Tail(20))
	}
	if d1, d2 := harness.SumDelivered(first), harness.SumDelivered(second); d1 != d2 {
		t.Errorf("delivered moved from %d to %d while a sink was stalled", d1, d2)
	}
	if lines1 != lines2 {
		t.Errorf("file sink a went on from %d to %d lines while the stdout sink was stalled", lines1, lines2)
	}
	if ahead := lines2 - harness.SumDelivered(second); ahead > buffer {
		t.Errorf("file sink a ran %d records ahead of what every sink acknowledged; the buffer holds %d", ahead, buffer)
	}
	if pend := harness.SinkPending(second); pend["tap"] == 0 || pend["a"] != 0 || pend["b"] != 0 {
		t.Errorf("/state pending %v: want the stalled tap alone", pend)
	}
	const kB = 1024
	if m2.RSS > 400_000*kB {
		t.Errorf("RSS %d kB with a stalled sink: memory is not bounded", m2.RSS/kB)
	}
	if m2.RSS > m1.RSS+50_000*kB {
		t.Errorf("RSS grew from %d to %d kB while stalled", m1.RSS/kB, m2.RSS/kB)
	}
	t.Logf("three sinks, tap stalled, buffer %d: file sinks held at %d lines (%d acknowledged by all); RSS %d then %d kB, peak (VmHWM) %d kB",
		buffer, lines2, harness.SumDelivered(second), m1.RSS/kB, m2.RSS/kB, m2.HWM/kB)
}
