package kafkarecord_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/kafka/kafkarecord"
	"github.com/svcexport/collector/internal/sink/ocsfenc"
	"github.com/svcexport/collector/internal/testinfra/kafkatest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func encode(t testing.TB, enc kafkarecord.Encoder, envs []record.Envelope, topics []string) []kgo.Record {
	t.Helper()
	recs, err := enc.Encode(envs, topics)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// A record with invalid UTF-8 reaches Kafka losslessly in both formats:
// the record format carries the bytes as the API sent them, the envelope
// format a valid JSON envelope with the repaired record and the original
// bytes in record_base64.
func TestARecordWithInvalidUTF8IsDeliveredLosslesslyInBothFormats(t *testing.T) {
	raw := []byte("{\"createdTime\":\"2026-11-20T10:00:00Z\",\"name\":\"bad \xff byte\"}")
	ws := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	var b record.Builder
	env, flaw := b.Build("dns", "acme", "createdTime", ws, ws.Add(time.Hour), ws, raw)
	if flaw&record.FlawInvalidUTF8 == 0 || env.Original == nil {
		t.Fatalf("flaw %v, original %q: want an invalid_utf8 flaw with the original kept", flaw, env.Original)
	}
	if got := encode(t, kafkarecord.Encoder{Raw: true}, []record.Envelope{env}, []string{"t"})[0].Value; !bytes.Equal(got, raw) {
		t.Errorf("record format value %q, want the bytes as sent %q", got, raw)
	}
	v := encode(t, kafkarecord.Encoder{}, []record.Envelope{env}, []string{"t"})[0].Value
	var got struct {
		ID           string          `json:"id"`
		Record       json.RawMessage `json:"record"`
		RecordBase64 string          `json:"record_base64"`
	}
	if !json.Valid(v) {
		t.Fatalf("envelope format value is not valid JSON: %q", v)
	}
	if err := json.Unmarshal(v, &got); err != nil {
		t.Fatal(err)
	}
	orig, err := base64.StdEncoding.DecodeString(got.RecordBase64)
	if err != nil || !bytes.Equal(orig, raw) || got.ID != env.ID {
		t.Fatalf("envelope record_base64 decodes to %q (%v), id %s; want %q and %s", orig, err, got.ID, raw, env.ID)
	}
}

// TestStandaloneSizeAgreesWithFranzGo sweeps record sizes across a batch
// limit and compares StandaloneSize with franz-go's own verdict:
// every record the sink lets through must be accepted, and every record
// franz-go refuses must be one a sink would dead-letter after the
// refusal (size + slack over the limit), so none is retried forever.
func TestStandaloneSizeAgreesWithFranzGo(t *testing.T) {
	const limit = 4096
	c := kafkatest.NewCluster(t, kfake.SeedTopics(1, "sizes"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ProducerBatchMaxBytes(limit),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var enc kafkarecord.Encoder
	ws := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	var refused, passed int
	for pad := 3400; pad < 3700; pad++ {
		raw := []byte(`{"createdTime":"2026-11-20T00:00:00Z","pad":"` + strings.Repeat("p", pad) + `"}`)
		var b record.Builder
		e, flaw := b.Build("dns", "acme", "createdTime", ws, ws.Add(time.Hour), ws, raw)
		if flaw != 0 {
			t.Fatal(flaw)
		}
		r := &encode(t, enc, []record.Envelope{e}, []string{"sizes"})[0]
		size := kafkarecord.StandaloneSize(r)
		err = cl.ProduceSync(ctx, r).FirstErr()
		switch {
		case err == nil:
			passed++
		case errors.Is(err, kerr.MessageTooLarge):
			refused++
			if size <= limit {
				t.Errorf("StandaloneSize %d <= %d but franz-go refused the record: a sink would produce it and fail", size, limit)
			}
			if size+kafkarecord.TooLargeSlack <= limit {
				t.Errorf("franz-go refused a record of StandaloneSize %d: a sink would retry it forever", size)
			}
		default:
			t.Fatalf("produce: %v", err)
		}
		if err == nil && size > limit+8 {
			t.Errorf("StandaloneSize %d is far over %d but franz-go took it: a sink would dead-letter records that fit", size, limit)
		}
	}
	if refused == 0 || passed == 0 {
		t.Fatalf("sweep did not cross the limit: %d passed, %d refused", passed, refused)
	}
}

// BenchmarkEncode is the CPU per record of encoding (envelope to Kafka
// record, no I/O, no compression).
func BenchmarkEncode(b *testing.B) {
	ws := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	var bld record.Builder
	envs := make([]record.Envelope, 5000)
	topics := make([]string, len(envs))
	for i := range envs {
		raw := []byte(`{"createdTime":"2026-11-20T00:00:00.123Z","query":"login.example.com","queryType":"A","resolvedIps":["10.1.2.3"],"deviceName":"WS-00042","seq":` + strings.Repeat("7", 1+i%9) + `}`)
		e, flaw := bld.Build("dns", "acme", "createdTime", ws, ws.Add(time.Hour), ws, raw)
		if flaw != 0 {
			b.Fatal(flaw)
		}
		envs[i], topics[i] = e, "svc.dns"
	}
	mapper, err := ocsfenc.New(ocsfenc.DefaultConfig(), nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, format := range []string{"envelope", "record", "ocsf"} {
		b.Run(format, func(b *testing.B) {
			enc := kafkarecord.Encoder{Raw: format == "record"}
			if format == "ocsf" {
				enc.OCSF = mapper
			}
			b.ReportAllocs()
			for b.Loop() {
				recs, err := enc.Encode(envs, topics)
				if err != nil || len(recs) != len(envs) {
					b.Fatal("short")
				}
			}
			b.ReportMetric(float64(b.N*len(envs))/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// The message timestamp is the record time by default, the page's fetch
// time with FetchedTimestamp, and the fetch time for a record without a
// time.
func TestTheMessageTimestampIsTheRecordTime(t *testing.T) {
	t.Parallel()
	rec, fetched := time.Date(2026, 11, 1, 10, 0, 0, 123_000_000, time.UTC), time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	envs := []record.Envelope{{ID: "a", Source: "dns", Account: "acme", Time: rec, FetchedAt: fetched, Record: []byte(`{}`)},
		{ID: "b", Source: "dns", Account: "acme", FetchedAt: fetched, Record: []byte(`{}`)}}
	topics := []string{"svc.dns", "svc.dns"}
	for _, tc := range []struct {
		enc  kafkarecord.Encoder
		want [2]time.Time
	}{{kafkarecord.Encoder{}, [2]time.Time{rec, fetched}}, {kafkarecord.Encoder{FetchedTimestamp: true}, [2]time.Time{fetched, fetched}}} {
		recs, err := tc.enc.Encode(envs, topics)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range recs {
			if !r.Timestamp.Equal(tc.want[i]) {
				t.Errorf("FetchedTimestamp %v, record %s: timestamp %v, want %v", tc.enc.FetchedTimestamp, r.Key, r.Timestamp, tc.want[i])
			}
		}
	}
}

// With EntityKeys the key is the record's account and entity per source,
// the id goes to the header id, and a record without its entity member
// keeps its id as the key.
func TestEntityKeysKeyEachSourceByItsEntity(t *testing.T) {
	t.Parallel()
	cases := []struct{ source, rec, key string }{
		{"edge_alerts", `{"uuid":"7f3c-alert","update_time":"2026-11-01T10:00:00.000Z"}`, "acme/7f3c-alert"},
		{"agent_info", `{"mid":4211,"hostname":"web-1"}`, "acme/4211"},
		{"connections", `{"srcEntityId":{"mid":77},"dstEntityId":{"mid":78}}`, "acme/77"},
		{"dns", `{"fqdn":"x.example.com"}`, "acme/x.example.com"},
		{"user_logins", `{"username":"alice"}`, "acme/alice"},
		{"audit_logs", `{"userName":"bob"}`, "acme/bob"},
		{"edge_audit_events", `{"user_login":"carol"}`, "acme/carol"},
		{"changed_files", `{"mid":5}`, "acme/5"},
		{"cloud_activities", `{"eventType":"ConsoleLogin"}`, "acme/ConsoleLogin"},
		{"dns", `{"name":"no fqdn"}`, ""},            // falls back to the id
		{"edge_alerts", `{"uuid":{"nested":1}}`, ""}, // not a scalar
	}
	var envs []record.Envelope
	var topics []string
	for i, c := range cases {
		envs = append(envs, record.Envelope{ID: strings.Repeat(string(rune('a'+i)), 64), Source: c.source, Account: "acme",
			Time: time.Unix(1_800_000_000, 0), FetchedAt: time.Unix(1_800_000_100, 0), Record: []byte(c.rec)})
		topics = append(topics, "svc."+c.source)
	}
	all := map[string]bool{}
	for _, src := range kafkarecord.EntitySources() {
		all[src] = true
	}
	recs, err := kafkarecord.Encoder{EntityKeys: all}.Encode(envs, topics)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		want := c.key
		if want == "" {
			want = envs[i].ID
		}
		var id string
		for _, h := range recs[i].Headers {
			if h.Key == kafkarecord.HeaderID {
				id = string(h.Value)
			}
		}
		if string(recs[i].Key) != want || id != envs[i].ID || len(recs[i].Headers) != 8 {
			t.Errorf("%s %s: key %q, id header %q, %d headers; want key %q and the id", c.source, c.rec, recs[i].Key, id, len(recs[i].Headers), want)
		}
	}
	plain, err := kafkarecord.Encoder{}.Encode(envs[:1], topics[:1])
	if err != nil || string(plain[0].Key) != envs[0].ID || len(plain[0].Headers) != 7 {
		t.Errorf("id keys: key %q, %d headers (%v)", plain[0].Key, len(plain[0].Headers), err)
	}
}

// Issue 29: an entity is unique within its account, so the same mid
// under two accounts makes two keys (on a compacted topic one agent must
// not erase the other), and an account holding the separator cannot make
// another pair's key. Only the sources named keep entity keys; in a batch
// of both, the others keep the id and no id header.
func TestEntityKeysAreQualifiedByAccount(t *testing.T) {
	t.Parallel()
	env := func(source, account, rec string) record.Envelope {
		id, err := record.ID(source, []byte(rec))
		if err != nil {
			t.Fatal(err)
		}
		return record.Envelope{ID: id, Source: source, Account: account, Time: time.Unix(1_800_000_000, 0),
			FetchedAt: time.Unix(1_800_000_100, 0), Record: []byte(rec)}
	}
	envs := []record.Envelope{
		env("agent_info", "acme", `{"mid":1001}`),
		env("agent_info", "acme-dev", `{"mid":1001}`),
		env("agent_info", "a/b", `{"mid":"c"}`),
		env("agent_info", "a", `{"mid":"b/c"}`),
		env("agent_info", "100%", `{"mid":"x"}`),
		env("dns", "acme", `{"fqdn":"x.example.com"}`),
	}
	topics := make([]string, len(envs))
	for i := range envs {
		topics[i] = "svc." + envs[i].Source
	}
	recs, err := kafkarecord.Encoder{EntityKeys: map[string]bool{"agent_info": true}}.Encode(envs, topics)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"acme/1001", "acme-dev/1001", "a%2Fb/c", "a/b/c", "100%25/x", envs[5].ID}
	seen := map[string]bool{}
	for i, r := range recs {
		if string(r.Key) != want[i] {
			t.Errorf("%s of %s: key %q, want %q", envs[i].Record, envs[i].Account, r.Key, want[i])
		}
		if seen[string(r.Key)] {
			t.Errorf("key %q twice", r.Key)
		}
		seen[string(r.Key)] = true
		_, hasID := headerOf(r, kafkarecord.HeaderID)
		if hasID != (envs[i].Source == "agent_info") {
			t.Errorf("%s record: id header %v", envs[i].Source, hasID)
		}
	}
}

func headerOf(r kgo.Record, key string) (string, bool) {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

// An inventory snapshot keeps the entity key ACCOUNT/mid (a compacted
// topic keeps each agent's latest state) and says it is a snapshot in a
// header and, format envelope, in the value; an event of the same agent
// carries neither.
func TestASnapshotCarriesItsHeaderAndTheEntityKey(t *testing.T) {
	t.Parallel()
	at := time.Unix(1_800_000_000, 0)
	ev := record.Envelope{ID: strings.Repeat("a", 64), Source: "agent_info", Account: "acme", Time: at, FetchedAt: at,
		Record: []byte(`{"mid":4211,"status":"ACTIVE"}`)}
	snap := ev
	snap.ID, snap.Snapshot, snap.Record = strings.Repeat("b", 64), true, []byte(`{"mid":4211,"status":"INACTIVE"}`)
	recs, err := kafkarecord.Encoder{EntityKeys: map[string]bool{"agent_info": true}}.Encode([]record.Envelope{ev, snap}, []string{"t", "t"})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, true} {
		got := false
		for _, h := range recs[i].Headers {
			if h.Key == kafkarecord.HeaderSnapshot {
				got = string(h.Value) == "true"
			}
		}
		if got != want || string(recs[i].Key) != "acme/4211" || strings.Contains(string(recs[i].Value), `"snapshot":true`) != want {
			t.Errorf("record %d: snapshot header %v, key %q, value %s; want snapshot %v under acme/4211", i, got, recs[i].Key, recs[i].Value, want)
		}
	}
}

// Headers given to Encode follow every record's own, snapshot records
// included, and a header appended to one record leaves the next one's
// alone.
func TestExtraHeadersFollowEveryRecordsOwn(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	envs := []record.Envelope{
		{ID: "a", Source: "agent_info", Account: "acme", Time: at, FetchedAt: at, Record: []byte(`{"mid":7}`), Snapshot: true},
		{ID: "b", Source: "dns", Account: "acme", Time: at, FetchedAt: at, Record: []byte(`{}`)},
	}
	extra := kgo.RecordHeader{Key: "collector_batch", Value: []byte("run/1/acme")}
	enc := kafkarecord.Encoder{EntityKeys: map[string]bool{"agent_info": true}}
	recs, err := enc.Encode(envs, []string{"t", "t"}, extra)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{10, 8} { // 7 + snapshot + id + extra; 7 + extra
		h := recs[i].Headers
		if len(h) != want || h[len(h)-1].Key != extra.Key || string(h[len(h)-1].Value) != string(extra.Value) {
			t.Fatalf("record %d headers %v: want %d with %s last", i, h, want, extra.Key)
		}
	}
	recs[0].Headers = append(recs[0].Headers, kgo.RecordHeader{Key: "x"})
	if recs[1].Headers[0].Key != kafkarecord.HeaderSource {
		t.Fatalf("appending to record 0's headers changed record 1's: %v", recs[1].Headers)
	}
}
