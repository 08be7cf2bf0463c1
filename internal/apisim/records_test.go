package apisim

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/record"
)

// testStreams builds the streams of a default config, one per source for
// account acme.
func testStreams(t testing.TB) (*Server, []*stream) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Now = newClock().Now
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	var out []*stream
	for src := sourceID(0); src < numSources; src++ {
		out = append(out, s.stream(src, "acme"))
	}
	return s, out
}

// C7: the id the truth computes from the generated canonical form equals
// record.ID of the bytes served, for every source, over many records with
// every served-form variation.
func TestC7ServedRecordIDEqualsTruthID(t *testing.T) {
	s, streams := testStreams(t)
	var r rec
	asOf := testNow.UnixMilli()
	for _, st := range streams {
		si := st.src.info()
		t.Run(si.name, func(t *testing.T) {
			var sawEsc, sawPlus, sawNonASCII bool
			for k := 0; k < 3000; k++ {
				m := asOf/60000 - 1 - int64(k%500)
				key := recKey(st.minuteBase(m), uint32(k))
				tm := recTime(m, key)
				s.gen.generate(&r, st, key, tm, asOf)
				served := r.appendServed(nil, nil)
				canon := r.appendCanonical(nil)
				if !json.Valid(served) {
					t.Fatalf("served record is not JSON: %s", served)
				}
				got, err := record.ID(si.name, served)
				if err != nil {
					t.Fatalf("record.ID: %v\n%s", err, served)
				}
				if want := record.IDOfCanonical(si.name, canon); got != want {
					rc, _ := record.Canonical(served)
					t.Fatalf("id mismatch\nserved: %s\nrecord.Canonical: %s\ngenerated canonical: %s", served, rc, canon)
				}
				sawEsc = sawEsc || bytes.Contains(served, []byte(`\u`))
				sawPlus = sawPlus || bytes.Contains(served, []byte(`+0000"`))
				sawNonASCII = sawNonASCII || bytes.ContainsFunc(served, func(r rune) bool { return r > 127 })
				// Keys in the seed's order, then the undocumented ones.
				var keys []string
				dec := json.NewDecoder(bytes.NewReader(served))
				dec.Token()
				for dec.More() {
					tk, _ := dec.Token()
					keys = append(keys, tk.(string))
					var skip json.RawMessage
					_ = dec.Decode(&skip)
				}
				if strings.Join(keys, ",") != strings.Join(si.fields, ",") {
					t.Fatalf("keys %v, want %v", keys, si.fields)
				}
				// The record time reads back as the time it was generated for.
				_, raw, err := record.AppendCanonicalField(nil, served, si.timeField)
				if err != nil {
					t.Fatal(err)
				}
				pt, err := record.ParseTime(raw)
				if err != nil || !pt.Equal(time.UnixMilli(tm).UTC()) {
					t.Fatalf("record time %s = %v (%v), want %v", raw, pt, err, time.UnixMilli(tm).UTC())
				}
			}
			if !sawEsc || !sawNonASCII || (!si.edge && !sawPlus) {
				t.Errorf("variations missing: \\u escapes %v, non-ASCII %v, +0000 %v", sawEsc, sawNonASCII, sawPlus)
			}
		})
	}
}

// The seed's field types: integers where it says integer, strings where it
// says string, edge times in integer milliseconds.
func TestRecordFieldTypesFollowTheSeed(t *testing.T) {
	s, streams := testStreams(t)
	var r rec
	asOf := testNow.UnixMilli()
	want := map[string]map[string]string{
		SourceChangedFiles:    {"mid": "number", "size": "number", "mtime": "string", "filedataHash": "string", "startTime": "string"},
		SourceConnections:     {"dstEntityId": "object", "endpointDetails": "array", "numConns": "number"},
		SourceDNS:             {"ttl": "number", "mid": "number", "fqdn": "string"},
		SourceUserLogins:      {"uid": "number", "activityType": "string"},
		SourceAgentInfo:       {"tags": "object", "mid": "number", "mode": "string", "status": "string"},
		SourceAuditLogs:       {"createdTime": "string", "accountName": "string"},
		SourceCloudActivities: {"eventId": "number", "eventMap": "object"},
		SourceEdgeAuditEvents: {"create_time": "number", "response_status": "number", "method": "string"},
		SourceEdgeAlerts:      {"create_time": "number", "update_time": "number", "related_entities": "object", "status": "string"},
	}
	for _, st := range streams {
		name := st.src.info().name
		m := asOf/60000 - 10
		key := recKey(st.minuteBase(m), 0)
		s.gen.generate(&r, st, key, recTime(m, key), asOf)
		var rec map[string]any
		if err := json.Unmarshal(r.appendServed(nil, nil), &rec); err != nil {
			t.Fatal(err)
		}
		for f, typ := range want[name] {
			var got string
			switch rec[f].(type) {
			case string:
				got = "string"
			case float64:
				got = "number"
			case map[string]any:
				got = "object"
			case []any:
				got = "array"
			}
			if got != typ {
				t.Errorf("%s.%s is %s, want %s", name, f, got, typ)
			}
		}
		if st.src == srcEdgeAlerts {
			switch rec["status"] {
			case "OPEN", "IN_PROGRESS", "CLOSED":
			default:
				t.Errorf("alert status %v", rec["status"])
			}
		}
	}
}
