package ocsf_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// validDNS is a DNS Activity event that the validator accepts; each case
// of TestValidatorRejects breaks it in one way.
const validDNS = `{"class_uid":4003,"class_name":"DNS Activity","category_uid":4,"category_name":"Network Activity",
"activity_id":6,"activity_name":"Traffic","type_uid":400306,"type_name":"DNS Activity: Traffic",
"severity_id":1,"severity":"Informational","time":1795161561250,
"metadata":{"version":"1.3.0","product":{"name":"P","vendor_name":"V"},"uid":"x","profiles":["host"]},
"device":{"type_id":0,"uid":"1015"},"query":{"hostname":"ocsp.digicert.com"},
"answers":[{"rdata":"185.247.151.81","type":"A","ttl":60}],"dst_endpoint":{"ip":"1.1.1.1","port":53},
"unmapped":{"anything":{"goes":[1]}}}`

// TestValidatorRejects shows that the schema validator the other tests
// rely on fails on each kind of mistake it is meant to catch.
func TestValidatorRejects(t *testing.T) {
	s := loadSchema(t)
	if errs := s.Validate([]byte(validDNS)); len(errs) > 0 {
		t.Fatalf("the valid event is rejected: %v", errs)
	}
	for _, tc := range []struct {
		name string
		edit func(ev map[string]any)
		want string
	}{
		{"a required attribute is missing", func(ev map[string]any) { delete(ev, "severity_id") }, "severity_id: required"},
		{"a required attribute of an object is missing", func(ev map[string]any) { delete(md(ev), "version") }, "metadata.version: required"},
		{"an attribute is unknown to the class", func(ev map[string]any) { ev["user"] = map[string]any{"name": "x"} }, "user: attribute unknown to class"},
		{"an attribute is unknown to an object", func(ev map[string]any) { obj(ev, "query")["bogus"] = 1 }, "query.bogus: attribute unknown to object"},
		{"a profile's attribute without the profile", func(ev map[string]any) { md(ev)["profiles"] = []any{} }, "device: attribute unknown"},
		{"a profile's required attribute", func(ev map[string]any) { md(ev)["profiles"] = []any{"host", "cloud"} }, "cloud: required"},
		{"an unknown profile", func(ev map[string]any) { md(ev)["profiles"] = []any{"host", "nope"} }, "unknown profile"},
		{"a string where an integer belongs", func(ev map[string]any) { ev["time"] = "1795161561250" }, "time: string, want timestamp_t"},
		{"a fraction in an integer", func(ev map[string]any) { ev["time"] = json.Number("1.5") }, "time: 1.5 is not a timestamp_t"},
		{"an integer where a string belongs", func(ev map[string]any) { obj(ev, "device")["uid"] = json.Number("1015") }, "device.uid: json.Number, want string_t"},
		{"an object where a string belongs", func(ev map[string]any) { obj(ev, "query")["hostname"] = map[string]any{} }, "query.hostname: map"},
		{"a scalar where an object belongs", func(ev map[string]any) { ev["query"] = "x" }, "query: string, want object dns_query"},
		{"an object where an array belongs", func(ev map[string]any) { ev["answers"] = map[string]any{} }, "answers: map[string]interface {}, want an array"},
		{"a bad element of an array", func(ev map[string]any) { ev["answers"].([]any)[0].(map[string]any)["ttl"] = "60" }, "answers[0].ttl: string"},
		{"a hostname the regex refuses", func(ev map[string]any) { obj(ev, "query")["hostname"] = "web-東京-1" }, "does not match the regex of hostname_t"},
		{"an address the regex refuses", func(ev map[string]any) { obj(ev, "dst_endpoint")["ip"] = "1.1.1" }, "does not match the regex of ip_t"},
		{"a port out of range", func(ev map[string]any) { obj(ev, "dst_endpoint")["port"] = json.Number("70000") }, "outside the range"},
		{"a value no enum has", func(ev map[string]any) { ev["activity_id"] = json.Number("3"); ev["type_uid"] = json.Number("400303") }, "activity_id: 3 is no value of the enum"},
		{"a sibling that is not the caption", func(ev map[string]any) { ev["severity"] = "High" }, `sibling severity is "High"`},
		{"a wrong type_uid", func(ev map[string]any) { ev["type_uid"] = json.Number("400301") }, "type_uid 400301"},
		{"a wrong category", func(ev map[string]any) { ev["category_uid"] = json.Number("3") }, "category_uid 3"},
		{"a wrong class name", func(ev map[string]any) { ev["class_name"] = "DNS" }, `class_name "DNS"`},
		{"an unknown class", func(ev map[string]any) { ev["class_uid"] = json.Number("4999") }, "no such class"},
		{"a broken constraint", func(ev map[string]any) { ev["dst_endpoint"] = map[string]any{"port": json.Number("53")} }, "needs at least one of"},
		{"a null", func(ev map[string]any) { ev["message"] = nil }, "message: null"},
		{"a string too long", func(ev map[string]any) { ev["message"] = strings.Repeat("x", 65536) }, "allows 65535"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := decode(t, []byte(validDNS)).(map[string]any)
			tc.edit(ev)
			b, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			errs := s.Validate(b)
			if !strings.Contains(strings.Join(errs, "\n"), tc.want) {
				t.Errorf("errors %q do not contain %q", errs, tc.want)
			}
		})
	}
}

func md(ev map[string]any) map[string]any { return obj(ev, "metadata") }

func obj(ev map[string]any, name string) map[string]any { return ev[name].(map[string]any) }
