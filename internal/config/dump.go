package config

import (
	"encoding"
	"fmt"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/svcexport/collector/internal/config/expand"
)

// toMap renders v (a struct with koanf tags) as nested maps keyed like the
// configuration file. Values that marshal themselves as text (secrets,
// which print redacted) use that text; durations print with units; every
// other string is quoted for the expansion of ${...} (expand.Quote), since
// loading the rendering back expands it. What is unset (a nil pointer, list
// or map: "inherit" or "none") is left out, so that the rendering loads
// back as the same configuration.
func toMap(v any) (*orderedMap, error) {
	r, _ := render(reflect.ValueOf(v))
	out, ok := r.(*orderedMap)
	if !ok {
		return nil, fmt.Errorf("configuration is not a struct")
	}
	return out, nil
}

// orderedMap is a struct rendered: its keys in the order of its fields, as
// configs/collector.yaml lists them.
type orderedMap struct {
	keys []string
	vals map[string]any
}

// drop removes keys from m.
func (m *orderedMap) drop(keys ...string) {
	for _, k := range keys {
		delete(m.vals, k)
		m.keys = slices.DeleteFunc(m.keys, func(s string) bool { return s == k })
	}
}

// MarshalYAML implements yaml.Marshaler.
func (m *orderedMap) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for _, k := range m.keys {
		var v yaml.Node
		if err := v.Encode(m.vals[k]); err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, &v)
	}
	return n, nil
}

var textMarshaler = reflect.TypeOf((*encoding.TextMarshaler)(nil)).Elem()

// render returns v as it is written in a file, and false when it is unset
// and is to be left out.
func render(v reflect.Value) (any, bool) {
	if !v.IsValid() {
		return nil, false
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice:
		if v.IsNil() {
			return nil, false
		}
	}
	if v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		v = v.Elem()
	}
	switch x := v.Interface().(type) {
	case time.Duration:
		return FormatDuration(x), true
	case string:
		// A value holding ${file:/etc/passwd} or $${X} must load back as
		// itself, not read the file or lose a dollar (issue 20).
		return yamlString(expand.Quote(redactURL(x))), true
	case os.FileMode:
		return fmt.Sprintf("0%o", uint32(x)), true
	}
	if v.Type().Implements(textMarshaler) {
		b, err := v.Interface().(encoding.TextMarshaler).MarshalText()
		if err != nil {
			return "<" + err.Error() + ">", true
		}
		return string(b), true
	}
	switch v.Kind() {
	case reflect.Struct:
		m := &orderedMap{vals: map[string]any{}}
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			tag := strings.Split(f.Tag.Get("koanf"), ",")[0]
			if tag == "-" {
				continue
			}
			if tag == "" {
				// An embedded type without a tag (a wrapped secret) renders
				// as itself.
				if f.Anonymous {
					return render(v.Field(i))
				}
				tag = strings.ToLower(f.Name)
			}
			if r, ok := render(v.Field(i)); ok {
				m.keys = append(m.keys, tag)
				m.vals[tag] = r
			}
		}
		return m, true
	case reflect.Map:
		m := map[string]any{}
		iter := v.MapRange()
		for iter.Next() {
			r, ok := render(iter.Value())
			if !ok {
				r = nil
			}
			m[fmt.Sprint(iter.Key().Interface())] = r
		}
		return m, true
	case reflect.Slice, reflect.Array:
		l := make([]any, v.Len())
		for i := range l {
			l[i], _ = render(v.Index(i))
		}
		return l, true
	default:
		return v.Interface(), true
	}
}

// yamlString is s as the YAML encoder should write it: a string with a
// control character (a newline, a tab) in double quotes, where every
// character is escaped as needed, since the literal block style the encoder
// chooses for a multi-line string cannot hold a line that starts with a tab
// ("\tx\ny" fails to print: "found a tab character where an indentation
// space is expected"); any other string in the encoder's own style.
func yamlString(s string) any {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Style: yaml.DoubleQuotedStyle, Value: s}
}

// redactURL hides the password of a URL that carries userinfo
// (http://user:secret@host): a dump must never show a credential, wherever
// the user put it.
func redactURL(s string) string {
	if !strings.Contains(s, "://") || !strings.Contains(s, "@") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, has := u.User.Password(); has {
		return u.Redacted()
	}
	u.User = url.User("xxxxx")
	return u.String()
}

// FormatDuration writes d the way the configuration is written, and
// ParseDuration reads it back: whole days as "7d", else Go's form without
// its zero tails ("1h30m", "2m", "500ms", "0s").
func FormatDuration(d time.Duration) string {
	const day = 24 * time.Hour
	if d >= day && d%day == 0 {
		return fmt.Sprintf("%dd", d/day)
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
