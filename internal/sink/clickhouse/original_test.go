package clickhouse

import (
	"context"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/chtest"
)

// A record delivered with a flaw keeps the bytes the API sent in
// record_original (record.Envelope.Original: invalid UTF-8, or no JSON at
// all), next to the repaired copy or null in record: ClickHouse loses
// nothing either. An ordinary record has NULL there. Over both protocols.
func TestARecordWithAFlawKeepsItsOriginalBytes(t *testing.T) {
	t.Parallel()
	ws := time.Date(2026, 8, 20, 0, 0, 0, 0, time.UTC)
	we, fetched := ws.Add(time.Hour), ws.Add(time.Hour+time.Minute)
	raws := [][]byte{
		[]byte(`{"createdTime":"2026-08-20T00:10:00.000Z","mid":1,"fqdn":"ordinary.example"}`),
		[]byte("{\"createdTime\":\"2026-08-20T00:11:00.000Z\",\"mid\":2,\"fqdn\":\"caf\xe9.example\"}"),
		[]byte(`{"createdTime":"2026-08-20T00:12:00.000Z","mid":3,"fqdn":"trunc`),
		[]byte("\x00\xfe\xff not JSON \x01"),
		{},
	}
	var b record.Builder
	var envs []record.Envelope
	for _, raw := range raws {
		e, _ := b.Build("dns", "acme", "createdTime", ws, we, fetched, raw)
		envs = append(envs, e)
	}
	if envs[0].Original != nil || envs[1].Original == nil || envs[2].Original == nil || envs[3].Original == nil || envs[4].Original == nil {
		t.Fatalf("the fixture does not hold the flaws it should: %+v", envs)
	}
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			srv := chtest.Get(t)
			db := srv.NewDatabase(t)
			s, _ := startSink(t, testConfig(srv, proto, db))
			writeAll(t, s, []*record.Batch{batchOf("dns", "acme", envs, 0)})

			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rows, err := openConn(t, srv.Native).Query(ctx, "SELECT id, record, record_original FROM "+db+".dns")
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			type stored struct {
				record   string
				original *string
			}
			got := map[string]stored{}
			for rows.Next() {
				var id string
				var r stored
				if err := rows.Scan(&id, &r.record, &r.original); err != nil {
					t.Fatal(err)
				}
				got[id] = r
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(envs) {
				t.Fatalf("%d rows, want %d", len(got), len(envs))
			}
			for i, e := range envs {
				r, ok := got[e.ID]
				switch {
				case !ok:
					t.Errorf("record %d (%q) not stored", i, raws[i])
				case r.record != string(e.Record):
					t.Errorf("record %d: record = %q, want %q", i, r.record, e.Record)
				case e.Original == nil && r.original != nil:
					t.Errorf("record %d: record_original = %q, want NULL", i, *r.original)
				case e.Original != nil && (r.original == nil || *r.original != string(raws[i])):
					t.Errorf("record %d: record_original = %v, want the bytes as sent %q", i, r.original, raws[i])
				}
			}
		})
	}
}
