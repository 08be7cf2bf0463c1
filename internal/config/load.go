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
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"
)

// EnvPrefix starts every environment variable the collector reads.
const EnvPrefix = "COLLECTOR_"

// KeyError is a problem with one configuration key. Its message is one line:
// "key: what is wrong".
type KeyError struct {
	Key string
	Msg string
}

func (e *KeyError) Error() string { return e.Key + ": " + e.Msg }

// load reads path (when not empty) and the environment into dst, which holds
// the defaults. Unknown keys and values of the wrong type are KeyErrors.
func load(path string, environ []string, dst any) error {
	k := koanf.New(".")
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("config file: %w", err)
		}
		if err := k.Load(file.Provider(path), yaml.Parser()); err != nil {
			return fmt.Errorf("config file %s: %w", path, err)
		}
	}
	envp := env.Provider(".", env.Opt{
		Prefix:        EnvPrefix,
		EnvironFunc:   func() []string { return environ },
		TransformFunc: envKey,
	})
	if err := k.Load(envp, nil); err != nil {
		return fmt.Errorf("environment: %w", err)
	}
	var errs []error
	reported := map[string]bool{}
	for _, key := range k.Keys() {
		if at, msg := checkKey(reflect.TypeOf(dst).Elem(), strings.Split(key, ".")); msg != "" && !reported[at] {
			reported[at] = true
			errs = append(errs, &KeyError{Key: at, Msg: msg})
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	err := k.UnmarshalWithConf("", dst, koanf.UnmarshalConf{
		Tag: "koanf",
		DecoderConfig: &mapstructure.DecoderConfig{
			Result:           dst,
			TagName:          "koanf",
			WeaklyTypedInput: true,
			ErrorUnused:      true,
			DecodeHook: mapstructure.ComposeDecodeHookFunc(
				durationHook,
				timeToStringHook,
				mapstructure.TextUnmarshallerHookFunc(),
				mapstructure.StringToSliceHookFunc(","),
			),
		},
	})
	if err != nil {
		return decodeErrors(err)
	}
	return nil
}

// envKey maps COLLECTOR_API__SECRET to api.secret. A value is parsed as a
// YAML list when it looks like one ([a, b]), so list keys can be set too.
func envKey(k, v string) (string, any) {
	key := strings.ToLower(strings.TrimPrefix(k, EnvPrefix))
	key = strings.ReplaceAll(key, "__", ".")
	if strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
		var items []string
		for _, s := range strings.Split(strings.Trim(v, "[]"), ",") {
			if s = strings.TrimSpace(s); s != "" {
				items = append(items, s)
			}
		}
		return key, items
	}
	return key, v
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
				return at(i), "unknown key" + suggest(t, path[i])
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

func suggest(t reflect.Type, name string) string {
	var names []string
	for i := 0; i < t.NumField(); i++ {
		if tag := strings.Split(t.Field(i).Tag.Get("koanf"), ",")[0]; tag != "" && tag != "-" {
			names = append(names, tag)
		}
	}
	sort.Strings(names)
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(n, name); d < bestD {
			best, bestD = n, d
		}
	}
	if best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return fmt.Sprintf(" (known: %s)", strings.Join(names, ", "))
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

var (
	decodingRe = regexp.MustCompile(`decoding '([^']*)': (.*)`)
	expectRe   = regexp.MustCompile(`'([^']*)' (expected .*)`)
	cannotRe   = regexp.MustCompile(`'([^']*)' (cannot parse .*)`)
	quotedRe   = regexp.MustCompile(`^'([^']*)' (.*)$`)
	indexRe    = regexp.MustCompile(`\[([^\]]*)\]`) // sources[dns] -> sources.dns
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
				out = append(out, &KeyError{Key: indexRe.ReplaceAllString(m[1], ".$1"), Msg: m[2]})
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
