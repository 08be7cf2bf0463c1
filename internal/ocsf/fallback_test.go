package ocsf_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/ocsf"
	"github.com/svcexport/collector/internal/record"
)

// windowStart and windowEnd frame the envelopes built by hand.
var (
	windowStart = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	windowEnd   = windowStart.Add(24 * time.Hour)
)

func timeField(source string) string {
	for _, s := range simSources() {
		if s.name == source {
			return s.timeField
		}
	}
	return ""
}

// build makes the envelope of raw as a poller would.
func build(source string, raw []byte) (record.Envelope, record.Flaw) {
	var b record.Builder
	return b.Build(source, "acme", timeField(source), windowStart, windowEnd, simNow, raw)
}

// TestChangedTypes replaces each member of real records by values of
// every JSON type (C3: known fields may change type). The mapping must
// not fail, the event must stay valid OCSF, nothing may be lost, and a
// member that no longer converts must be counted as a fallback.
func TestChangedTypes(t *testing.T) {
	s := loadSchema(t)
	m := ocsf.New(ocsf.Options{})
	replacements := []string{`{"x":1}`, `[1,"a"]`, `true`, `"text"`, `"2026-11-20T10:00:00+0000"`, `12345`, `-1.5`, `""`, `null`, `"999.1.1.1"`}
	envs := simEnvelopes(t, 1)
	cases := 0
	for _, source := range ocsf.Sources() {
		for _, orig := range envs[source][:3] {
			base, _, _ := m.Append(nil, &orig)
			baseUnmapped, _ := decode(t, base).(map[string]any)["unmapped"].(map[string]any)
			rec, names := members(t, orig.Record)
			for _, name := range names {
				for _, repl := range replacements {
					changed := map[string]any{}
					for k, v := range rec {
						changed[k] = v
					}
					changed[name] = json.RawMessage(repl)
					raw, _ := json.Marshal(changed)
					e, _ := build(source, raw)
					out, fallbacks, err := m.Append(nil, &e)
					if err != nil {
						t.Fatalf("%s.%s = %s: %v", source, name, repl, err)
					}
					checkEvent(t, s, &e, out, fallbacks)
					ev := decode(t, out).(map[string]any)
					unmapped, _ := ev["unmapped"].(map[string]any)
					_, nowUnmapped := unmapped[name]
					_, wasUnmapped := baseUnmapped[name]
					wasTyped := rec[name] != nil && !wasUnmapped
					_, wasObject := rec[name].(map[string]any)
					// Exceptions: members of an object no document names
					// are no fallback (C3), nor a well-formed method OCSF
					// 1.3.0 has no value for.
					excused := (wasObject && strings.HasPrefix(repl, "{")) || (source == "edge_audit_events" && name == "method")
					if nowUnmapped && wasTyped && fallbacks == 0 && !excused {
						t.Errorf("%s.%s = %s went to unmapped without a fallback\nevent %s", source, name, repl, out)
					}
					if !nowUnmapped && fallbacks > 0 && repl != "null" {
						// Only a member that stays typed may still count
						// when part of it failed (a nested value).
						if _, isObj := rec[name].(map[string]any); !isObj {
							t.Errorf("%s.%s = %s: %d fallbacks but the member is typed\nevent %s", source, name, repl, fallbacks, out)
						}
					}
					cases++
				}
			}
			if t.Failed() {
				t.FailNow()
			}
		}
	}
	t.Logf("%d changed records mapped", cases)
}

// TestOddRecords covers records the API should not send but may: each
// must map to a valid event that keeps everything.
func TestOddRecords(t *testing.T) {
	s := loadSchema(t)
	m := ocsf.New(ocsf.Options{})
	for _, tc := range []struct {
		name, source, raw string
		fallbacks         int
		want              []string // substrings of the event
	}{
		{"an empty object", "dns", `{}`, 0, []string{`"profiles":["host"]}}`}},
		{"no object but an array", "changed_files", `[1,2]`, 1, []string{`"unmapped":{"record":[1,2]}`, `"file":{"name":"Unknown"`}},
		{"a string", "edge_alerts", `"alert"`, 1, []string{`"unmapped":{"record":"alert"}`, `"finding_info":{"uid":"Unknown","title":"Unknown"}`}},
		{"a repeated member", "dns", `{"createdTime":"2026-11-20T10:00:00Z","fqdn":"a.example","fqdn":"b.example"}`, 1,
			[]string{`"unmapped":{"fqdn":"a.example","fqdn":"b.example"}`}},
		{"a pretty-printed record", "dns", "{\n  \"createdTime\": \"2026-11-20T10:00:00Z\",\n  \"x\": {\n    \"y\": [1, 2]\n  }\n}", 0,
			[]string{`"unmapped":{"x":{    "y": [1, 2]  }}`}},
		{"an unreadable record time", "dns", `{"createdTime":"yesterday","mid":7}`, 1,
			[]string{`"time":1795132800000`, `"original_time":"yesterday"`, `"unmapped":{"createdTime":"yesterday"}`}},
		{"a time with +0000", "user_logins", `{"createdTime":"2026-11-20T10:00:00.5+0000","activityTime":"2026-11-20T11:00:00+01:00"}`, 0,
			[]string{`"time":1795168800500`, `"start_time":1795168800000`, `"original_time":"2026-11-20T10:00:00.5+0000"`}},
		{"an integer as a string", "dns", `{"createdTime":"2026-11-20T10:00:00Z","mid":"0042","ttl":"300","hostIpAddr":"::1"}`, 0,
			[]string{`"uid":"0042"`, `"ttl":300`, `"type":"AAAA"`}},
		{"a hostname with a trailing dot", "dns", `{"createdTime":"2026-11-20T10:00:00Z","fqdn":"example.com."}`, 1,
			[]string{`"unmapped":{"fqdn":"example.com."}`}},
		{"an address that is none", "agent_info", `{"createdTime":"2026-11-20T10:00:00Z","ipAddr":"10.0.0.256"}`, 1,
			[]string{`"device":{"type_id":0,"name":"Unknown"}`, `"unmapped":{"ipAddr":"10.0.0.256"}`}},
		{"escapes in names and values", "audit_logs", `{"\u0075serName":"a\u0040b.example","eventName":"\ud83d\ude80 \"go\""}`, 0,
			[]string{`"email_addr":"a\u0040b.example"`, `"operation":"\ud83d\ude80 \"go\""`}},
		{"an unknown activity", "user_logins", `{"activityType":"SU"}`, 0,
			[]string{`"activity_id":99,"activity_name":"SU","type_uid":300299,"type_name":"Authentication: SU"`}},
		{"an unknown alert status and severity", "edge_alerts", `{"status":"SNOOZED","severity":9,"create_time":1795168800000}`, 0,
			[]string{`"severity_id":99,"severity":"9","status_id":99,"status":"SNOOZED"`}},
		{"a severity that is no number", "edge_alerts", `{"severity":"high"}`, 1,
			[]string{`"severity_id":0,"severity":"Unknown"`, `"unmapped":{"severity":"high"}`}},
		{"a hash that is too long", "changed_files", `{"filedataHash":"` + strings.Repeat("ab", 64) + `"}`, 1,
			[]string{`"unmapped":{"filedataHash"`}},
		{"a nested value that does not convert", "connections", `{"srcEntityId":{"mid":{"a":1},"pid_hash":"0x1"},"srcEntityType":"Process"}`, 1,
			[]string{`"actor":{"process":{"uid":"0x1"}}`, `"unmapped":{"srcEntityId":{"mid":{"a":1},"pid_hash":"0x1"},"srcEntityType":"Process"}`}},
		{"a PATCH", "edge_audit_events", `{"method":"PATCH","op":"PATCH /x"}`, 0,
			[]string{`"activity_id":3`, `"unmapped":{"method":"PATCH"}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := build(tc.source, []byte(tc.raw))
			out, fallbacks, err := m.Append([]byte("prefix "), &e)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(out), "prefix {") {
				t.Fatalf("Append does not append: %.40s", out)
			}
			out = out[len("prefix "):]
			checkEvent(t, s, &e, out, fallbacks)
			if fallbacks != tc.fallbacks {
				t.Errorf("fallbacks %d, want %d", fallbacks, tc.fallbacks)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("event lacks %s\nevent %s", w, out)
				}
			}
		})
	}
}

// TestFlawedEnvelopes maps envelopes record.Builder repaired: the bytes as
// sent survive under unmapped, as in the collector's own encoding (C7).
func TestFlawedEnvelopes(t *testing.T) {
	s := loadSchema(t)
	m := ocsf.New(ocsf.Options{})
	for _, tc := range []struct {
		name string
		raw  string
		flaw record.Flaw
	}{
		{"not JSON", `{"createdTime":`, record.FlawNotJSON},
		{"invalid UTF-8", "{\"createdTime\":\"2026-11-20T10:00:00Z\",\"fqdn\":\"caf\xe9\"}", record.FlawInvalidUTF8},
		{"no time", `{"mid":1}`, record.FlawTimeMissing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, flaw := build("dns", []byte(tc.raw))
			if flaw&tc.flaw == 0 {
				t.Fatalf("Build gave flaw %v, want %v", flaw, tc.flaw)
			}
			out, fallbacks, err := m.Append(nil, &e)
			if err != nil {
				t.Fatal(err)
			}
			checkEvent(t, s, &e, out, fallbacks)
			ev := decode(t, out).(map[string]any)
			u, _ := ev["unmapped"].(map[string]any)
			if e.Original != nil {
				want := e.Original
				if got, _ := u["record_base64"].(string); got == "" {
					t.Errorf("no record_base64 for a repaired record: %s", out)
				} else if b64 := decodeB64(t, got); string(b64) != string(want) {
					t.Errorf("record_base64 holds %q, want %q", b64, want)
				}
			}
		})
	}
}

// TestErrors: Append refuses only what no poller builds.
func TestErrors(t *testing.T) {
	m := ocsf.New(ocsf.Options{})
	dst := []byte("keep")
	for _, tc := range []struct {
		name string
		e    *record.Envelope
		is   error
	}{
		{"nil", nil, nil},
		{"an unknown source", &record.Envelope{Source: "nope", Record: []byte(`{}`)}, ocsf.ErrUnknownSource},
		{"invalid JSON", &record.Envelope{Source: "dns", Record: []byte(`{"a":}`)}, nil},
		{"two values", &record.Envelope{Source: "dns", Record: []byte(`{} {}`)}, nil},
		{"invalid UTF-8", &record.Envelope{Source: "dns", Record: []byte("{\"a\":\"\xff\"}")}, nil},
		{"too deep", &record.Envelope{Source: "dns", Record: []byte(strings.Repeat("[", 300) + strings.Repeat("]", 300))}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := m.Append(dst, tc.e)
			if err == nil {
				t.Fatalf("no error, event %s", out)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
			if string(out) != "keep" {
				t.Errorf("dst changed to %q", out)
			}
		})
	}
}

// TestOptions: product names by API, vendor, version, and raw_data off by
// default.
func TestOptions(t *testing.T) {
	core, _ := build("dns", []byte(`{"createdTime":"2026-11-20T10:00:00Z"}`))
	edge, _ := build("edge_alerts", []byte(`{"create_time":1795168800000}`))
	for _, tc := range []struct {
		name       string
		o          ocsf.Options
		e          *record.Envelope
		want, lack string
	}{
		{"core defaults", ocsf.Options{}, &core, `"product":{"name":"Cloud Security Platform","vendor_name":"SVC"}`, `raw_data`},
		{"edge defaults", ocsf.Options{}, &edge, `"product":{"name":"Edge Access","vendor_name":"SVC"}`, `raw_data`},
		{"all set", ocsf.Options{ProductName: "P \"1\"", VendorName: "V", ProductVersion: "2.0", RawData: true}, &core,
			`"product":{"name":"P \"1\"","vendor_name":"V","version":"2.0"}`, ``},
		{"raw data", ocsf.Options{RawData: true}, &edge, `"raw_data":"{\"create_time\":1795168800000}"}`, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := ocsf.New(tc.o).Append(nil, tc.e)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("event lacks %s: %s", tc.want, out)
			}
			if tc.lack != "" && strings.Contains(string(out), tc.lack) {
				t.Errorf("event has %s: %s", tc.lack, out)
			}
		})
	}
}

func TestClassOf(t *testing.T) {
	want := map[string]int{"changed_files": 1001, "connections": 4001, "dns": 4003, "user_logins": 3002, "agent_info": 5001,
		"audit_logs": 6003, "cloud_activities": 6003, "edge_audit_events": 6003, "edge_alerts": 2004}
	for _, source := range ocsf.Sources() {
		uid, name := ocsf.ClassOf(source)
		if uid != want[source] || name == "" {
			t.Errorf("ClassOf(%s) = %d %q, want %d", source, uid, name, want[source])
		}
	}
	if len(ocsf.Sources()) != len(want) {
		t.Errorf("Sources() = %v", ocsf.Sources())
	}
	if uid, name := ocsf.ClassOf("nope"); uid != 0 || name != "" {
		t.Errorf("ClassOf(nope) = %d %q", uid, name)
	}
}

func decodeB64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("base64 %q: %v", s, err)
	}
	return b
}

// A protocol sent with escapes (C3 allows any JSON spelling of a string)
// is decoded before it is lower-cased: "T\u0043P" is protocol_name "tcp"
// with protocol_num 6, as "TCP" is. It used to come out as "TCPtcp".
func TestEscapedProtocolIsLowerCasedOnce(t *testing.T) {
	m := ocsf.New(ocsf.Options{})
	for _, proto := range []string{`"TCP"`, `"T\u0043P"`, `"\u0054\u0043\u0050"`, `"tc\u0070"`} {
		raw := []byte(`{"startTime":1763600000000,"endpointDetails":[{"dst_ip_addr":"10.0.0.2","dst_port":443,"protocol":` + proto + `,"src_ip_addr":"10.0.0.1"}]}`)
		e, _ := build("connections", raw)
		out, _, err := m.Append(nil, &e)
		if err != nil {
			t.Fatalf("%s: %v", proto, err)
		}
		ci, _ := decode(t, out).(map[string]any)["connection_info"].(map[string]any)
		if ci["protocol_name"] != "tcp" || fmt.Sprint(ci["protocol_num"]) != "6" {
			t.Errorf("protocol %s: connection_info %v, want protocol_name tcp, protocol_num 6", proto, ci)
		}
	}
}
