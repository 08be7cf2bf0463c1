package config

import (
	"encoding"
	"fmt"
	"net/url"
	"os"
	"reflect"
	"strings"
	"time"
)

// toMap renders v (a struct with koanf tags) as nested maps keyed like the
// configuration file. Values that marshal themselves as text (secrets,
// which print redacted) use that text; durations print with units.
func toMap(v any) (map[string]any, error) {
	out, ok := render(reflect.ValueOf(v)).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("configuration is not a struct")
	}
	return out, nil
}

var textMarshaler = reflect.TypeOf((*encoding.TextMarshaler)(nil)).Elem()

func render(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	switch x := v.Interface().(type) {
	case time.Duration:
		return x.String()
	case string:
		return redactURL(x)
	case os.FileMode:
		return fmt.Sprintf("0%o", uint32(x))
	}
	if v.Type().Implements(textMarshaler) {
		b, err := v.Interface().(encoding.TextMarshaler).MarshalText()
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	switch v.Kind() {
	case reflect.Struct:
		m := map[string]any{}
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
			m[tag] = render(v.Field(i))
		}
		return m
	case reflect.Map:
		m := map[string]any{}
		iter := v.MapRange()
		for iter.Next() {
			m[fmt.Sprint(iter.Key().Interface())] = render(iter.Value())
		}
		return m
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return []any{}
		}
		l := make([]any, v.Len())
		for i := range l {
			l[i] = render(v.Index(i))
		}
		return l
	default:
		return v.Interface()
	}
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
