package ocsf_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/svcexport/collector/internal/ocsf"
	"github.com/svcexport/collector/internal/record"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// decode reads JSON keeping numbers exact.
func decode(t testing.TB, b []byte) any {
	t.Helper()
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %.300s: %v", b, err)
	}
	return v
}

// members returns the top-level members of a record that is an object,
// decoded, and their names in the order sent.
func members(t testing.TB, raw []byte) (map[string]any, []string) {
	t.Helper()
	m, ok := decode(t, raw).(map[string]any)
	if !ok {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var names []string
	d.Token() // {
	for d.More() {
		k, _ := d.Token()
		names = append(names, k.(string))
		var skip json.RawMessage
		d.Decode(&skip)
	}
	return m, names
}

// eventValues collects every string and number of an event outside
// unmapped and raw_data, so a record's value can be looked up.
func eventValues(ev map[string]any) map[string]bool {
	seen := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		case string:
			seen[x] = true
		case json.Number:
			seen[x.String()] = true
		case bool:
			seen[fmt.Sprint(x)] = true
		}
	}
	for k, v := range ev {
		if k != "unmapped" && k != "raw_data" {
			walk(v)
		}
	}
	return seen
}

// encoded are members whose value becomes an enum id, not a value of the
// event: the test checks the id instead.
var encoded = map[string]string{
	"user_logins.activityType": "activity_id",
	"edge_alerts.status":       "status_id",
	"edge_alerts.severity":     "severity_id",
}

// dropped reports the leaves of a record member's value that appear
// nowhere in the event (a member not under unmapped must be held by
// attributes). A time may appear as Unix milliseconds, an integer as a
// string, a protocol in lower case.
func dropped(value any, seen map[string]bool) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		case nil:
		default:
			s := fmt.Sprint(x)
			if seen[s] || seen[strings.ToLower(s)] {
				return
			}
			if t, err := record.ParseTimeString(s); err == nil && seen[fmt.Sprint(t.UnixMilli())] {
				return
			}
			out = append(out, s)
		}
	}
	walk(value)
	return out
}

// countLeaves counts the scalar values (null aside) inside v.
func countLeaves(v any) int {
	switch x := v.(type) {
	case map[string]any:
		n := 0
		for _, c := range x {
			n += countLeaves(c)
		}
		return n
	case []any:
		n := 0
		for _, c := range x {
			n += countLeaves(c)
		}
		return n
	case nil:
		return 0
	}
	return 1
}

// checkEvent runs every property on one mapped record and returns the
// names of the members held by typed attributes (for coverage).
func checkEvent(t *testing.T, s *schema, e *record.Envelope, out []byte, fallbacks int) (mapped, present []string) {
	t.Helper()
	for _, msg := range s.Validate(out) {
		t.Errorf("%s %s: %s\nrecord %s\nevent  %s", e.Source, e.ID, msg, e.Record, out)
	}
	if bytes.ContainsAny(out, "\n\r") {
		t.Errorf("%s %s: the event spans lines", e.Source, e.ID)
	}
	ev := decode(t, out).(map[string]any)
	md := ev["metadata"].(map[string]any)
	if md["uid"] != e.ID {
		t.Errorf("%s: metadata.uid %v, want the record id %s", e.Source, md["uid"], e.ID)
	}
	if got := ev["time"].(json.Number).String(); got != fmt.Sprint(e.Time.UnixMilli()) {
		t.Errorf("%s %s: time %s, want %d", e.Source, e.ID, got, e.Time.UnixMilli())
	}
	rec, names := members(t, e.Record)
	unmapped, _ := ev["unmapped"].(map[string]any)
	seen := eventValues(ev)
	for _, name := range names {
		value := rec[name]
		if value == nil {
			continue // null: nothing to keep
		}
		present = append(present, name)
		if u, ok := unmapped[name]; ok {
			if !reflect.DeepEqual(u, value) {
				t.Errorf("%s %s: unmapped.%s = %v, the record has %v", e.Source, e.ID, name, u, value)
			}
			continue
		}
		mapped = append(mapped, name)
		if id, ok := encoded[e.Source+"."+name]; ok {
			if n := ev[id].(json.Number).String(); n == "0" {
				t.Errorf("%s %s: %s %v became %s 0", e.Source, e.ID, name, value, id)
			}
			continue
		}
		if lost := dropped(value, seen); len(lost) > 0 {
			t.Errorf("%s %s: member %s is neither under unmapped nor in the event: %v\nevent %s", e.Source, e.ID, name, lost, out)
		}
	}
	for name := range unmapped {
		if _, ok := rec[name]; !ok && name != "record" && !strings.HasSuffix(name, "record_base64") {
			t.Errorf("%s %s: unmapped.%s is no member of the record", e.Source, e.ID, name)
		}
	}
	return mapped, present
}

// TestSimulatorRecords maps every record of every source that the
// simulator serves for many seeds (a property test over its generator:
// Unicode, escapes, +0000 offsets, ISO times in integer fields, alerts in
// every state) and checks each event against the OCSF 1.3.0 schema, that
// no member is lost, and that none needed a fallback.
func TestSimulatorRecords(t *testing.T) {
	s := loadSchema(t)
	seeds := 10
	if testing.Short() {
		seeds = 2
	}
	m := ocsf.New(ocsf.Options{RawData: true})
	counts := map[string]int{}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		for source, envs := range simEnvelopes(t, seed) {
			for i := range envs {
				e := &envs[i]
				out, fallbacks, err := m.Append(nil, e)
				if err != nil {
					t.Fatalf("%s %s: %v", source, e.ID, err)
				}
				checkEvent(t, s, e, out, fallbacks)
				if fallbacks != 0 {
					t.Errorf("%s %s: %d fallbacks for a record of the simulator\nrecord %s\nevent  %s", source, e.ID, fallbacks, e.Record, out)
				}
				ev := decode(t, out).(map[string]any)
				if raw, _ := ev["raw_data"].(string); raw != string(e.Record) {
					t.Errorf("%s %s: raw_data is not the record as sent", source, e.ID)
				}
				counts[source]++
			}
		}
		if t.Failed() {
			t.Fatalf("seed %d failed", seed)
		}
	}
	for _, source := range ocsf.Sources() {
		if counts[source] < 100*seeds {
			t.Errorf("%s: only %d records over %d seeds", source, counts[source], seeds)
		}
	}
	t.Logf("records checked: %v", counts)
}

// TestCoverage computes, per source, the share of the members the
// simulator's records carry (null ones aside) that typed attributes hold
// in full, the share per field, and the share of all scalar values inside
// the records (nested ones too) that appear in typed attributes (by
// value: an approximation); docs/ocsf.md quotes these figures. The floors
// make a mapping that loses attributes fail.
func TestCoverage(t *testing.T) {
	s := loadSchema(t)
	m := ocsf.New(ocsf.Options{})
	type tally struct{ mapped, present int }
	total := map[string]*tally{}
	leaves := map[string]*tally{} // scalar values inside the members, typed or not
	fields := map[string]map[string]*tally{}
	for seed := int64(1); seed <= 3; seed++ {
		for source, envs := range simEnvelopes(t, seed) {
			if total[source] == nil {
				total[source], fields[source], leaves[source] = &tally{}, map[string]*tally{}, &tally{}
			}
			for i := range envs {
				out, fb, err := m.Append(nil, &envs[i])
				if err != nil {
					t.Fatal(err)
				}
				mapped, present := checkEvent(t, s, &envs[i], out, fb)
				total[source].mapped += len(mapped)
				total[source].present += len(present)
				for _, f := range present {
					if fields[source][f] == nil {
						fields[source][f] = &tally{}
					}
					fields[source][f].present++
				}
				for _, f := range mapped {
					fields[source][f].mapped++
				}
				ev := decode(t, out).(map[string]any)
				seen := eventValues(ev)
				rec, _ := members(t, envs[i].Record)
				for name, v := range rec {
					n := countLeaves(v)
					leaves[source].present += n
					if _, ok := encoded[source+"."+name]; ok {
						leaves[source].mapped += n
					} else {
						leaves[source].mapped += n - len(dropped(v, seen))
					}
				}
			}
		}
	}
	floor := map[string]float64{
		"changed_files": 0.85, "connections": 0.48, "dns": 0.85, "user_logins": 0.87, "agent_info": 0.63,
		"audit_logs": 0.85, "cloud_activities": 0.74, "edge_audit_events": 0.70, "edge_alerts": 0.56,
	}
	for _, source := range ocsf.Sources() {
		tl := total[source]
		share := float64(tl.mapped) / float64(tl.present)
		var per []string
		names := make([]string, 0, len(fields[source]))
		for f := range fields[source] {
			names = append(names, f)
		}
		sort.Strings(names)
		for _, f := range names {
			ft := fields[source][f]
			per = append(per, fmt.Sprintf("%s %.0f%%", f, 100*float64(ft.mapped)/float64(ft.present)))
		}
		lv := leaves[source]
		t.Logf("coverage %-18s %5.1f%% of members (%d of %d), %5.1f%% of values typed: %s", source, 100*share, tl.mapped, tl.present,
			100*float64(lv.mapped)/float64(lv.present), strings.Join(per, ", "))
		if share < floor[source] {
			t.Errorf("%s: coverage %.1f%% under the floor %.0f%%", source, 100*share, 100*floor[source])
		}
	}
}

// TestConcurrent maps the same envelopes from many goroutines with one
// Mapper (its pooled scratch space must not leak between calls).
func TestConcurrent(t *testing.T) {
	envs := simEnvelopes(t, 2)
	m := ocsf.New(ocsf.Options{RawData: true})
	var all []*record.Envelope
	var want [][]byte
	for _, source := range ocsf.Sources() {
		for i := range envs[source] {
			e := &envs[source][i]
			out, _, err := m.Append(nil, e)
			if err != nil {
				t.Fatal(err)
			}
			all, want = append(all, e), append(want, out)
		}
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			var buf []byte
			for k := range all {
				i := (k*7 + g*131) % len(all)
				buf, _, _ = m.Append(buf[:0], all[i])
				if !bytes.Equal(buf, want[i]) {
					t.Errorf("goroutine %d, %s: event differs\n got %s\nwant %s", g, all[i].ID, buf, want[i])
					return
				}
			}
		})
	}
	wg.Wait()
}
