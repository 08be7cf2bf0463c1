package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/v2"
	"go.yaml.in/yaml/v3"

	"github.com/svcexport/collector/internal/config/expand"
	"github.com/svcexport/collector/internal/suggest"
)

// EnvPrefix starts every environment variable the collector reads.
const EnvPrefix = "COLLECTOR_"

// ConfigPathEnv names the configuration file when --config does not: the
// command line's, never a key of the configuration.
const ConfigPathEnv = EnvPrefix + "CONFIG"

// KeyError is a problem with one configuration key. Its message is one line:
// "key: what is wrong".
type KeyError struct {
	Key string
	Msg string
}

func (e *KeyError) Error() string { return e.Key + ": " + e.Msg }

// loadResult is what load learnt besides the values it decoded.
type loadResult struct {
	// problems are the unknown keys, the references that failed and the
	// values of the wrong type, one KeyError each.
	problems []error
	// left maps the keys whose ${...} a lenient load left unresolved to
	// that reference; they keep their defaults.
	left map[string]string
	// top are the top-level keys the file or the environment set.
	top map[string]bool
}

// load reads path (when not empty) and the environment into dst, which holds
// the defaults, expanding the file's ${...} references (leaving unset
// variables and files alone for the keys lenient names; it may be nil). Every problem it can report is
// collected, not only the first: unknown keys and failed references are
// left out and the rest decoded, so that the values of the wrong type are
// found in the same pass. Its error is for a file that cannot be read or
// parsed at all.
func load(path string, environ []string, dst any, lenient func(key string) bool) (loadResult, error) {
	root := reflect.TypeOf(dst).Elem()
	res := loadResult{left: map[string]string{}, top: map[string]bool{}}
	k := koanf.New(".")
	if path == "" {
		// The entries of tenants come from the file; the environment
		// only sets keys of an entry there (applyTenantEnv).
		res.problems = append(res.problems, applyTenantEnv(map[string]any{}, environ)...)
	}
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return res, fmt.Errorf("config file: %w", err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(b, &m); err != nil {
			return res, fmt.Errorf("config file %s: %w", path, err)
		}
		if m == nil {
			m = map[string]any{}
		}
		res.problems = append(res.problems, literalTenantSecrets(m)...)
		var failed []*expand.KeyError
		failed, res.left = expand.Tree(environ, lenient, m)
		for _, e := range failed {
			res.problems = append(res.problems, &KeyError{Key: e.Key, Msg: e.Msg})
		}
		res.problems = append(res.problems, applyTenantEnv(m, environ)...)
		if err := k.Load(mapProvider(m), nil); err != nil {
			return res, fmt.Errorf("config file %s: %w", path, err)
		}
		// A list key may be written as one string ("[a, b]" or "a,b"), as
		// in the environment, for instance from a ${VAR}.
		for _, key := range k.Keys() {
			if v, ok := k.Get(key).(string); ok {
				if lv := listValue(root, key, v); lv != nil {
					_ = k.Set(key, lv)
				}
			}
		}
	}
	envp := env.Provider(".", env.Opt{
		Prefix:      EnvPrefix,
		EnvironFunc: func() []string { return environ },
		TransformFunc: func(name, v string) (string, any) {
			if name == ConfigPathEnv {
				return "", nil // skipped: the file's path, not a key
			}
			if _, _, ok := tenantEnv(name); ok {
				return "", nil // applied to the file's entry (applyTenantEnv)
			}
			key := envKey(name)
			if lv := listValue(root, key, v); lv != nil {
				return key, lv
			}
			return key, v
		},
	})
	if err := k.Load(envp, nil); err != nil {
		return res, fmt.Errorf("environment: %w", err)
	}
	reported := map[string]bool{}
	for _, key := range k.Keys() {
		res.top[strings.Split(key, ".")[0]] = true
	}
	for _, key := range k.Keys() {
		if at, msg := checkKey(root, strings.Split(key, ".")); msg != "" && !reported[at] {
			reported[at] = true
			res.problems = append(res.problems, &KeyError{Key: at, Msg: msg})
		}
	}
	for at := range reported {
		k.Delete(at)
	}
	err := k.UnmarshalWithConf("", dst, koanf.UnmarshalConf{
		Tag:           "koanf",
		DecoderConfig: decoderConfig(dst),
	})
	if err != nil {
		res.problems = append(res.problems, splitJoined(withValues(decodeErrors(err), k.Get))...)
	}
	return res, nil
}

// mapProvider hands koanf a map already parsed (and expanded).
type mapProvider map[string]any

func (m mapProvider) ReadBytes() ([]byte, error)    { return nil, errors.New("mapProvider has no bytes") }
func (m mapProvider) Read() (map[string]any, error) { return m, nil }

// envKey maps COLLECTOR_API__SECRET to api.secret.
func envKey(name string) string {
	key := strings.ToLower(strings.TrimPrefix(name, EnvPrefix))
	return strings.ReplaceAll(key, "__", ".")
}

// listValue returns v as a list when it looks like one ([a, b]) and key is
// a list (or an unknown place that may hold one, like simulator.settings),
// so that list keys can be set from the environment; nil otherwise. A
// secret (api.secret, edge.token, any password) or any other string key is
// never a list, whatever its value looks like.
func listValue(root reflect.Type, key, v string) []string {
	if !strings.HasPrefix(v, "[") || !strings.HasSuffix(v, "]") {
		return nil
	}
	if t, known := keyType(root, strings.Split(key, ".")); known && t.Kind() != reflect.Slice && t.Kind() != reflect.Interface {
		return nil
	}
	items := []string{}
	for _, s := range strings.Split(strings.Trim(v, "[]"), ",") {
		if s = strings.TrimSpace(s); s != "" {
			items = append(items, s)
		}
	}
	return items
}

// keyType returns the type of the value at the dotted key path of t, and
// whether it is known (false for a key that is not one, or that lies under
// a free-form map).
func keyType(t reflect.Type, path []string) (reflect.Type, bool) {
	for _, seg := range path {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Struct:
			f, ok := fieldByTag(t, seg)
			if !ok {
				return nil, false
			}
			t = f.Type
		case reflect.Map:
			t = t.Elem()
		default:
			return nil, false
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t, true
}

var durationType = reflect.TypeOf(time.Duration(0))

// durationHook reads durations with units, including days ("7d", "92d",
// "1d12h"); a bare number other than 0 is refused so that "max_window: 7"
// does not silently mean 7 nanoseconds.
func durationHook(from, to reflect.Type, data any) (any, error) {
	if to != durationType {
		return data, nil
	}
	switch v := data.(type) {
	case string:
		return ParseDuration(v)
	case int, int64, float64, uint64:
		if reflect.ValueOf(v).Convert(reflect.TypeOf(float64(0))).Float() == 0 {
			return time.Duration(0), nil
		}
		return nil, fmt.Errorf("duration %v has no unit (write e.g. 30s, 5m, 2h, 7d)", v)
	}
	return data, nil
}

// timeToStringHook keeps a YAML timestamp (start: 2026-11-20T00:00:00Z,
// which the YAML parser reads as a time) usable for a string key.
func timeToStringHook(from, to reflect.Type, data any) (any, error) {
	if t, ok := data.(time.Time); ok && to.Kind() == reflect.String {
		return t.Format(time.RFC3339Nano), nil
	}
	return data, nil
}

var dayRe = regexp.MustCompile(`^(\d+(?:\.\d+)?)d(.*)$`)

// ParseDuration is time.ParseDuration that also accepts a leading number of
// days: "7d", "1d12h", "92d".
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	neg := strings.HasPrefix(s, "-")
	if m := dayRe.FindStringSubmatch(strings.TrimPrefix(s, "-")); m != nil {
		days, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		d := time.Duration(days * float64(24*time.Hour))
		if m[2] != "" {
			rest, err := time.ParseDuration(m[2])
			if err != nil {
				return 0, fmt.Errorf("invalid duration %q", s)
			}
			d += rest
		}
		if neg {
			d = -d
		}
		return d, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q (write e.g. 30s, 5m, 2h, 7d)", s)
	}
	return d, nil
}

// checkKey reports why the dotted key path is not a key of t: the prefix of
// the path that is wrong and what is wrong, or "" when it is a key. A map
// consumes one segment (its key), a struct one per field.
func checkKey(t reflect.Type, path []string) (string, string) {
	at := func(i int) string { return strings.Join(path[:i+1], ".") }
	for i := 0; i < len(path); i++ {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Struct:
			if t == durationType {
				return at(i - 1), "is a value, not a section"
			}
			f, ok := fieldByTag(t, path[i])
			if !ok {
				return at(i), "unknown key" + didYouMean(t, path[i])
			}
			t = f.Type
		case reflect.Map:
			if t.Elem().Kind() == reflect.Interface {
				return "", ""
			}
			t = t.Elem()
		case reflect.Slice, reflect.Interface:
			return "", "" // lists are checked when decoded
		default:
			return at(i - 1), "is a value, not a section"
		}
	}
	return "", ""
}

func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := strings.Split(f.Tag.Get("koanf"), ",")[0]
		if tag == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func didYouMean(t reflect.Type, name string) string {
	var names []string
	for i := 0; i < t.NumField(); i++ {
		if tag := strings.Split(t.Field(i).Tag.Get("koanf"), ",")[0]; tag != "" && tag != "-" {
			names = append(names, tag)
		}
	}
	sort.Strings(names)
	if best := suggest.Closest(name, names); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return fmt.Sprintf(" (known: %s)", strings.Join(names, ", "))
}

var (
	decodingRe = regexp.MustCompile(`decoding '([^']*)': (.*)`)
	expectRe   = regexp.MustCompile(`'([^']*)' (expected .*)`)
	cannotRe   = regexp.MustCompile(`'([^']*)' (cannot parse .*)`)
	quotedRe   = regexp.MustCompile(`^'([^']*)' (.*)$`)
	indexRe    = regexp.MustCompile(`\[([^\]]*)\]`) // sources[dns] -> sources.dns
	parseRe    = regexp.MustCompile(`^cannot parse value as '([^']*)': (strconv\.\w+: )?`)
)

// decodeErrors turns mapstructure's multi-line report into KeyErrors.
func decodeErrors(err error) error {
	var out []error
	for _, line := range strings.Split(err.Error(), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "*"))
		if line == "" || strings.HasPrefix(line, "decoding failed") || strings.HasSuffix(line, "error(s) decoding:") {
			continue
		}
		for _, re := range []*regexp.Regexp{decodingRe, expectRe, cannotRe, quotedRe} {
			if m := re.FindStringSubmatch(line); m != nil {
				msg := m[2]
				if p := parseRe.FindStringSubmatch(msg); p != nil {
					msg = "is not a valid " + p[1] + " (" + strings.TrimPrefix(msg, p[0]) + ")"
				}
				out = append(out, &KeyError{Key: indexRe.ReplaceAllString(m[1], ".$1"), Msg: msg})
				line = ""
				break
			}
		}
		if line != "" {
			out = append(out, errors.New(line))
		}
	}
	if len(out) == 0 {
		return err
	}
	return errors.Join(out...)
}

// withValues appends to each KeyError of err, a value of the wrong type,
// the value the configuration gave (`pipeline.buffer_records: is not a
// valid int (invalid syntax), got "abc"`), looked up by get with the
// error's key; the values of keys that may hold a credential and values
// that are not scalars are not echoed.
func withValues(err error, get func(key string) any) error {
	if err == nil {
		return nil
	}
	var out []error
	for _, e := range splitJoined(err) {
		var ke *KeyError
		if errors.As(e, &ke) && !mayBeSecret(ke.Key) {
			switch v := get(ke.Key).(type) {
			case string:
				e = &KeyError{Key: ke.Key, Msg: fmt.Sprintf("%s, got %q", ke.Msg, v)}
			case bool, int, int64, uint64, float64:
				e = &KeyError{Key: ke.Key, Msg: fmt.Sprintf("%s, got %v", ke.Msg, v)}
			}
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// mayBeSecret reports whether the last part of key names a credential
// (secret, password, token, key...): its value is never echoed.
func mayBeSecret(key string) bool {
	last := strings.ToLower(key[strings.LastIndex(key, ".")+1:])
	for _, w := range []string{"secret", "password", "token", "key", "credential", "sasl"} {
		if strings.Contains(last, w) {
			return true
		}
	}
	return false
}

// decoderConfig is how every part of a configuration is decoded into
// result: the whole file (Load) and each entry of the sinks list, which
// decodes on its own (SinkConfig.UnmarshalMapstructure) and must read its
// values exactly as the one-sink section would.
func decoderConfig(result any) *mapstructure.DecoderConfig {
	return &mapstructure.DecoderConfig{
		Result:           result,
		TagName:          "koanf",
		WeaklyTypedInput: true,
		ErrorUnused:      true,
		DecodeHook: mapstructure.ComposeDecodeHookFunc(
			durationHook,
			timeToStringHook,
			mapstructure.TextUnmarshallerHookFunc(),
			mapstructure.StringToSliceHookFunc(","),
		),
	}
}
