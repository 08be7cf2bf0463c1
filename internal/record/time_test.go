package record

import (
	"testing"
	"time"
)

func TestParseTimeAcceptsTheFormsTheAPISends(t *testing.T) {
	want := time.Date(2026, 11, 20, 10, 0, 0, 123e6, time.UTC)
	for _, raw := range []string{
		`"2026-11-20T10:00:00.123Z"`,
		`"2026-11-20T10:00:00.123+00:00"`,
		`"2026-11-20T10:00:00.123+0000"`,
		`"2026-11-20T11:00:00.123+01:00"`,
		`"2026-11-20T10:00:00.123"`,
		`"2026-11-20 10:00:00.123Z"`,
		`1795168800123`,
		`"1795168800123"`,
		`1795168800.123`,
	} {
		got, err := ParseTime([]byte(raw))
		if err != nil || !got.Equal(want) {
			t.Errorf("%s: got %v, %v", raw, got, err)
		}
	}
	for _, raw := range []string{``, `null`, `"yesterday"`, `true`} {
		if _, err := ParseTime([]byte(raw)); err == nil {
			t.Errorf("%s: no error", raw)
		}
	}
}

func TestEnvelopeJSONKeepsTheRecordVerbatim(t *testing.T) {
	var b Builder
	raw := []byte(`{"fqdn":"ex.com","createdTime":"2026-11-20T10:00:00.123Z","extra":{"ü":[1]}}`)
	at := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	e, err := b.Build("dns", "acme", "createdTime", at, at.Add(24*time.Hour), at.Add(48*time.Hour), raw)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := ID("dns", raw)
	if e.ID != id {
		t.Fatalf("id %s != %s", e.ID, id)
	}
	got := string(e.AppendJSON(nil))
	want := `{"id":"` + id + `","source":"dns","account":"acme","time":"2026-11-20T10:00:00.123Z","window_start":"2026-11-20T00:00:00.000Z","window_end":"2026-11-21T00:00:00.000Z","fetched_at":"2026-11-22T00:00:00.000Z","record":` + string(raw) + `}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if _, err := b.Build("dns", "acme", "createdTime", at, at, at, []byte(`{"fqdn":"x"}`)); err == nil {
		t.Fatal("a record without its time field must be an error")
	}
}
