package kafka

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/record"
)

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
	rec := encoder{format: FormatRecord, contentType: []byte(ContentType)}
	if got := rec.encode([]record.Envelope{env}, []string{"t"})[0].Value; !bytes.Equal(got, raw) {
		t.Errorf("record format value %q, want the bytes as sent %q", got, raw)
	}
	envFmt := encoder{format: FormatEnvelope, contentType: []byte(ContentType)}
	v := envFmt.encode([]record.Envelope{env}, []string{"t"})[0].Value
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
