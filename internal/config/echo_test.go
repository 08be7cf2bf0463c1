package config

import (
	"errors"
	"strings"
	"testing"
)

// A value of the wrong type is echoed after its key (issue 24), except
// where the key may hold a credential or the value is not a scalar.
func TestWithValuesEchoesScalarsButNoCredential(t *testing.T) {
	t.Parallel()
	values := map[string]any{
		"pipeline.buffer_records":   "abc",
		"sink.kafka.sasl.password":  "hunter2",
		"pipeline.flush_interval":   []any{"x"},
		"checkpoint.open_timeout":   true,
		"sink.clickhouse.api_token": "t0ken",
	}
	var in []error
	for k := range values {
		in = append(in, &KeyError{Key: k, Msg: "is not a valid int"})
	}
	got := withValues(errors.Join(in...), func(k string) any { return values[k] }).Error()
	for _, want := range []string{`pipeline.buffer_records: is not a valid int, got "abc"`, "checkpoint.open_timeout: is not a valid int, got true", "pipeline.flush_interval: is not a valid int\n"} {
		if !strings.Contains(got+"\n", want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
	for _, secret := range []string{"hunter2", "t0ken"} {
		if strings.Contains(got, secret) {
			t.Errorf("echoed a credential %q:\n%s", secret, got)
		}
	}
}
