package kafkarecord_test

import (
	"errors"
	"mime"
	"slices"
	"strings"
	"testing"

	"github.com/svcexport/collector/internal/ocsf"
	"github.com/svcexport/collector/internal/ocsf/ocsftest"
	"github.com/svcexport/collector/internal/sink/kafka/kafkarecord"
	"github.com/svcexport/collector/internal/sink/ocsfenc"
)

// Format ocsf changes the value and the content-type only: the key is the
// record id and every other header is the one of format envelope; the
// value is the record's OCSF event, valid per the vendored schema.
func TestOCSFValueKeepsKeyAndHeaders(t *testing.T) {
	enc, err := ocsfenc.New(ocsfenc.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	envs := ocsftest.Envelopes(t)
	topics := make([]string, len(envs))
	for i := range envs {
		topics[i] = "svc." + envs[i].Source
	}
	plain := encode(t, kafkarecord.Encoder{}, envs, topics)
	events := encode(t, kafkarecord.Encoder{OCSF: enc}, envs, topics)
	s := ocsftest.Load(t)
	for i := range envs {
		p, o := plain[i], events[i]
		if string(o.Key) != envs[i].ID || o.Topic != topics[i] {
			t.Errorf("record %d: key %s topic %s, want %s %s", i, o.Key, o.Topic, envs[i].ID, topics[i])
		}
		if len(o.Headers) != len(p.Headers) {
			t.Fatalf("record %d: %d headers, format envelope has %d", i, len(o.Headers), len(p.Headers))
		}
		for j, h := range o.Headers {
			want := p.Headers[j]
			if h.Key == kafkarecord.HeaderContentType {
				want.Value = []byte(kafkarecord.ContentTypeOCSF)
			}
			if h.Key != want.Key || string(h.Value) != string(want.Value) {
				t.Errorf("record %d: header %s=%s, want %s=%s", i, h.Key, h.Value, want.Key, want.Value)
			}
		}
		for _, msg := range s.CheckEvent(o.Value, &envs[i], false) {
			t.Errorf("record %d (%s): %s\n%s", i, envs[i].Source, msg, o.Value)
		}
	}
}

// The content-type of format ocsf parses as application/json with the
// release of package ocsf as its profile.
func TestOCSFContentTypeNamesTheRelease(t *testing.T) {
	mt, params, err := mime.ParseMediaType(kafkarecord.ContentTypeOCSF)
	if err != nil || mt != "application/json" {
		t.Fatalf("ParseMediaType = %q %v %v", mt, params, err)
	}
	if want := "https://schema.ocsf.io/" + ocsf.Version; params["profile"] != want {
		t.Errorf("profile %q, want %q", params["profile"], want)
	}
}

// An envelope the mapper can never take fails the batch, naming it.
func TestOCSFUnmappableEnvelopeFailsTheBatch(t *testing.T) {
	enc, err := ocsfenc.New(ocsfenc.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	envs := slices.Clone(ocsftest.Envelopes(t)[:3])
	envs[1].Source = "no_such_source"
	_, err = kafkarecord.Encoder{OCSF: enc}.Encode(envs, []string{"a", "b", "c"})
	if !errors.Is(err, ocsf.ErrUnknownSource) || !strings.Contains(err.Error(), envs[1].ID) {
		t.Fatalf("Encode = %v, want ErrUnknownSource naming %s", err, envs[1].ID)
	}
}

var _ kafkarecord.Mapper = (*ocsfenc.Encoder)(nil)
