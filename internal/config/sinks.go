package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/go-viper/mapstructure/v2"

	"github.com/svcexport/collector/internal/sink/clickhouse"
	"github.com/svcexport/collector/internal/sink/file"
	"github.com/svcexport/collector/internal/sink/kafka"
	"github.com/svcexport/collector/internal/sink/stdout"
)

// The sinks of a configuration: either the one-sink section "sink" or the
// list "sinks", each entry a sink block with a name. A sink's errors name
// its block by key path: "sink.kafka.brokers" for the one-sink section,
// "sinks[1].kafka.brokers" for the second entry of the list (by index, so
// that a missing, bad or repeated name never makes a path ambiguous).

// sinkNameRe is what a sink name may be: it is a metric label value, a
// /readyz check name and part of a file name.
var sinkNameRe = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

// DefaultSink returns the defaults of one sink block: the "sink" section
// and every entry of "sinks".
func DefaultSink() SinkConfig {
	return SinkConfig{
		Type:       SinkFile,
		File:       file.DefaultConfig(),
		Stdout:     stdout.DefaultConfig(),
		Kafka:      kafka.DefaultConfig(),
		ClickHouse: clickhouse.DefaultConfig(),
	}
}

// SinkName is the sink's name: Name, or its type when Name is empty (the
// one-sink section is named after its type).
func (s SinkConfig) SinkName() string {
	if s.Name != "" {
		return s.Name
	}
	return s.Type
}

// Key is the key path of the sink's block: "sink", or "sinks[i]" for an
// entry of the list as Sinks returns it.
func (s SinkConfig) Key() string {
	if s.key == "" {
		return "sink"
	}
	return s.key
}

// Sinks returns the configured sinks in order: the entries of "sinks", or
// else the one of "sink". Each knows its key path (Key) and name
// (SinkName).
func (c Config) Sinks() []SinkConfig {
	if len(c.SinkList) == 0 {
		s := c.Sink
		s.key = "sink"
		return []SinkConfig{s}
	}
	out := make([]SinkConfig, len(c.SinkList))
	for i, s := range c.SinkList {
		s.key = fmt.Sprintf("sinks[%d]", i)
		out[i] = s
	}
	return out
}

// KeyedError rewrites an error of the sink's type, which names its keys
// under "sink." (sink.kafka.brokers: must be set), so that it names the
// sink's own block (sinks[1].kafka.brokers: must be set); an error without
// a key gets the block's. For the one-sink section it changes nothing.
func (s SinkConfig) KeyedError(err error) error {
	if err == nil || s.Key() == "sink" {
		return err
	}
	var out []error
	for _, e := range leafErrors(err) {
		if key, msg, ok := s.ownKey(e.Error()); ok {
			out = append(out, &KeyError{Key: key, Msg: msg})
		} else {
			out = append(out, fmt.Errorf("%s: %w", s.Key(), e))
		}
	}
	return errors.Join(out...)
}

// ownKey splits text, an error message of the sink's type that starts
// with its key ("sink.kafka.brokers: must be set"), into that key renamed
// to the sink's block ("sinks[1].kafka.brokers") and the rest; ok is false
// when text does not start with a key under "sink".
func (s SinkConfig) ownKey(text string) (key, msg string, ok bool) {
	key, msg, ok = strings.Cut(text, ": ")
	if !ok || (key != "sink" && !strings.HasPrefix(key, "sink.")) || strings.ContainsAny(key, " \t") {
		return "", "", false
	}
	return s.Key() + strings.TrimPrefix(key, "sink"), msg, true
}

// Rekeyed renames the key an error of the running sink starts with
// ("sink.clickhouse.cluster: the server does not know cluster ...") to the
// sink's own block ("sinks[1].clickhouse.cluster: ..."), keeping the error
// it wraps for errors.Is and errors.As. An error that does not start with a
// key of the sink ("sink" or under "sink.") is returned as it is, and so
// is any error of the one-sink section.
func (s SinkConfig) Rekeyed(err error) error {
	if err == nil || s.Key() == "sink" {
		return err
	}
	key, msg, ok := s.ownKey(err.Error())
	if !ok {
		return err
	}
	return &rekeyedError{text: key + ": " + msg, err: err}
}

// rekeyedError is an error with its leading key renamed (Rekeyed).
type rekeyedError struct {
	text string
	err  error
}

func (e *rekeyedError) Error() string { return e.text }
func (e *rekeyedError) Unwrap() error { return e.err }

// leafErrors flattens (nested) errors.Join.
func leafErrors(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leafErrors(e)...)
		}
		return out
	}
	return []error{err}
}

// SinkList is the list of sinks (key "sinks"); see Config.Sinks.
type SinkList []SinkConfig

// UnmarshalMapstructure decodes the list, each entry as a sink block (see
// SinkConfig.UnmarshalMapstructure). Anything but a list is an error: the
// loader would otherwise take a mapping for a list of one.
func (l *SinkList) UnmarshalMapstructure(in any) error {
	items, ok := in.([]any)
	if !ok {
		return fmt.Errorf("must be a list of sinks (- {name: NAME, type: TYPE, TYPE: {...}}), not %s", kindOf(in))
	}
	out := make(SinkList, len(items))
	for i, item := range items {
		if item == nil {
			out[i] = SinkConfig{set: true, decodeErr: &KeyError{Msg: "is empty"}}
			continue
		}
		if err := out[i].UnmarshalMapstructure(item); err != nil {
			return err
		}
	}
	*l = out
	return nil
}

// kindOf names what a YAML value is, for messages.
func kindOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "a mapping"
	case string:
		return "a string"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// plainSink is SinkConfig without its UnmarshalMapstructure.
type plainSink SinkConfig

// UnmarshalMapstructure decodes one sink block (the "sink" section or an
// entry of "sinks") over DefaultSink, with the loader's rules: unknown keys
// and values of the wrong type are errors naming the key. A list entry
// would otherwise start from zero values, not from the defaults. The
// errors are kept, relative to the block, for Validate to report under the
// block's key path; the block counts as set (see Validate: "sink" and
// "sinks" together are an error).
func (s *SinkConfig) UnmarshalMapstructure(in any) error {
	d := DefaultSink()
	d.set = true
	m, ok := in.(map[string]any)
	if !ok {
		d.decodeErr = &KeyError{Msg: fmt.Sprintf("must be a mapping of name, type and the type's block, not %s", kindOf(in))}
		*s = d
		return nil
	}
	errs := decodeChecked(m, reflect.TypeOf(SinkConfig{}), (*plainSink)(&d))
	_, d.typed = m["type"]
	d.decodeErr = errors.Join(errs...)
	*s = d
	return nil
}

// entryErrors returns the decoding errors of the list entry at key (e.g.
// sinks[1], tenants[3]), each KeyError's key under the entry's.
func entryErrors(key string, decodeErr error) []error {
	var errs []error
	for _, e := range leafErrors(decodeErr) {
		var ke *KeyError
		if errors.As(e, &ke) {
			k := key
			if ke.Key != "" {
				k += "." + ke.Key
			}
			errs = append(errs, &KeyError{Key: k, Msg: ke.Msg})
			continue
		}
		errs = append(errs, fmt.Errorf("%s: %w", key, e))
	}
	return errs
}

// decodeChecked decodes the list entry m into out, whose keys are those of
// typ: every unknown or misplaced key is an error naming it (checkKey),
// and only a map without such keys is decoded, its errors naming the key
// and the value that is wrong.
func decodeChecked(m map[string]any, typ reflect.Type, out any) []error {
	var errs []error
	reported := map[string]bool{}
	for _, path := range flatKeys(m, nil) {
		if at, msg := checkKey(typ, path); msg != "" && !reported[at] {
			reported[at] = true
			errs = append(errs, &KeyError{Key: at, Msg: msg})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	dec, err := mapstructure.NewDecoder(decoderConfig(out))
	if err == nil {
		err = dec.Decode(m)
	}
	if err != nil {
		errs = append(errs, withValues(decodeErrors(err), func(key string) any { return lookup(m, key) }))
	}
	return errs
}

// flatKeys lists the dotted key paths (split) of the leaves of m.
func flatKeys(m map[string]any, prefix []string) [][]string {
	var out [][]string
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		path := append(append([]string(nil), prefix...), k)
		if sub, ok := m[k].(map[string]any); ok && len(sub) > 0 {
			out = append(out, flatKeys(sub, path)...)
			continue
		}
		out = append(out, path)
	}
	return out
}

// validateSinks checks "sink" or every entry of "sinks", each under its
// key path, and what the sinks must not share: a name, a file sink's
// directory, standard output.
func (c Config) validateSinks() []error {
	var errs []error
	if c.Sink.set && len(c.SinkList) > 0 {
		errs = append(errs, &KeyError{Key: "sinks", Msg: "set together with sink: use one of them (sinks lists every sink; sink is the one-sink form)"})
	}
	names := map[string]string{} // name -> key of the first sink of that name
	dirs := map[string]string{}
	stdout := ""
	for _, s := range c.Sinks() {
		key := s.Key()
		if s.decodeErr != nil {
			errs = append(errs, entryErrors(key, s.decodeErr)...)
			continue
		}
		if s.Name != "" && !sinkNameRe.MatchString(s.Name) {
			errs = append(errs, &KeyError{Key: key + ".name", Msg: fmt.Sprintf("%q: use 1 to 64 of a-z, 0-9, _ and -", s.Name)})
		}
		if first, dup := names[s.SinkName()]; dup {
			errs = append(errs, &KeyError{Key: key + ".name", Msg: fmt.Sprintf("%q is the name of %s too: give each sink a name of its own", s.SinkName(), first)})
		} else {
			names[s.SinkName()] = key
		}
		typ := s.Type
		if s.Key() != "sink" && s.set && !s.typed {
			typ = "" // an entry of the list says what it is
		}
		switch typ {
		case SinkFile:
			errs = append(errs, s.KeyedError(s.File.Validate()))
			errs = append(errs, c.tenantSinkErrors(s)...)
			if s.File.Dir != "" {
				dir, _ := filepath.Abs(s.File.Dir)
				if first, dup := dirs[dir]; dup {
					errs = append(errs, &KeyError{Key: key + ".file.dir", Msg: fmt.Sprintf("%s writes into %s too: each file sink needs a directory of its own", first, s.File.Dir)})
				} else {
					dirs[dir] = key
				}
			}
		case SinkStdout:
			errs = append(errs, s.KeyedError(s.Stdout.Validate()))
			if stdout != "" {
				errs = append(errs, &KeyError{Key: key + ".type", Msg: fmt.Sprintf("%s writes to standard output already: at most one stdout sink", stdout)})
			}
			stdout = key
		case SinkKafka:
			errs = append(errs, s.KeyedError(s.Kafka.Validate()))
		case SinkClickHouse:
			errs = append(errs, s.KeyedError(s.ClickHouse.Validate()))
			errs = append(errs, c.tenantSinkErrors(s)...)
		case "":
			errs = append(errs, &KeyError{Key: key + ".type", Msg: "must be set (file, stdout, kafka, clickhouse)"})
		default:
			errs = append(errs, &KeyError{Key: key + ".type", Msg: fmt.Sprintf("unknown sink %q (file, stdout, kafka, clickhouse)", s.Type)})
		}
	}
	return errs
}

// lookup is the value at a dotted key of m, nil when there is none.
func lookup(m map[string]any, key string) any {
	var v any = m
	for _, part := range strings.Split(key, ".") {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[part]
	}
	return v
}
