package ocsftest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Validate checks one event (one JSON object) and returns what is wrong
// with it, one message per mistake naming the attribute; nil when the
// event is valid OCSF 1.3.0. It is safe for concurrent use.
func (s *Schema) Validate(event []byte) []string {
	var ev map[string]any
	dec := json.NewDecoder(bytes.NewReader(event))
	dec.UseNumber()
	if err := dec.Decode(&ev); err != nil {
		return []string{"not a JSON object: " + err.Error()}
	}
	v := &validation{s: s, profiles: map[string]bool{}}
	uid := num(ev["class_uid"])
	class := s.classes[uid]
	if class == nil {
		return []string{fmt.Sprintf("class_uid %v: no such class in %s", ev["class_uid"], SchemaDir)}
	}
	if md, ok := ev["metadata"].(map[string]any); ok {
		if ps, ok := md["profiles"].([]any); ok {
			for _, p := range ps {
				name, _ := p.(string)
				if !s.profiles[name] {
					v.errorf("metadata.profiles: unknown profile %v", p)
				}
				v.profiles[name] = true
			}
		}
	}
	if got := num(ev["category_uid"]); got != class.category.uid {
		v.errorf("category_uid %d, class %d is in category %d", got, uid, class.category.uid)
	}
	if ev["class_name"] != nil && ev["class_name"] != class.caption {
		v.errorf("class_name %q, want %q", ev["class_name"], class.caption)
	}
	if ev["category_name"] != nil && ev["category_name"] != class.category.caption {
		v.errorf("category_name %q, want %q", ev["category_name"], class.category.caption)
	}
	activity := num(ev["activity_id"])
	if got := num(ev["type_uid"]); got != uid*100+activity {
		v.errorf("type_uid %d, want class_uid*100+activity_id = %d", got, uid*100+activity)
	}
	if tn, ok := ev["type_name"]; ok {
		want := class.caption + ": " + fmt.Sprint(ev["activity_name"])
		if tn != want {
			v.errorf("type_name %q, want %q", tn, want)
		}
	}
	v.object("", ev, class)
	return v.errs
}

type validation struct {
	s        *Schema
	profiles map[string]bool
	errs     []string
}

func (v *validation) errorf(format string, args ...any) {
	v.errs = append(v.errs, fmt.Sprintf(format, args...))
}

func join(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// visible reports whether attribute a may appear: not a profile's, or of
// a profile the event names.
func (v *validation) visible(a map[string]any) bool {
	p, _ := a["profile"].(string)
	return p == "" || v.profiles[p]
}

func (v *validation) object(p string, value map[string]any, d *definition) {
	if len(d.attrs) == 0 {
		return // "object": any members (unmapped)
	}
	for k, val := range value {
		a := v.s.attr(d, k)
		if a == nil || !v.visible(a) {
			v.errorf("%s: attribute unknown to %s %q", join(p, k), map[bool]string{true: "class", false: "object"}[d.uid != 0], d.name)
			continue
		}
		v.value(join(p, k), val, a, value)
	}
	for _, k := range d.required {
		if a := v.s.attr(d, k); v.visible(a) {
			if _, ok := value[k]; !ok {
				v.errorf("%s: required attribute missing", join(p, k))
			}
		}
	}
	for kind, list := range d.constraints {
		n := 0
		var want []string
		for _, k := range list.([]any) {
			want = append(want, k.(string))
			if _, ok := value[k.(string)]; ok {
				n++
			}
		}
		switch {
		case kind == "at_least_one" && n == 0:
			v.errorf("%s: %s %q needs at least one of %v", p, "constraint of", d.name, want)
		case kind == "just_one" && n != 1:
			v.errorf("%s: %s %q needs exactly one of %v", p, "constraint of", d.name, want)
		}
	}
}

func (v *validation) value(p string, val any, a map[string]any, parent map[string]any) {
	if val == nil {
		v.errorf("%s: null (leave the attribute out instead)", p)
		return
	}
	if a["is_array"] == true {
		arr, ok := val.([]any)
		if !ok {
			v.errorf("%s: %T, want an array", p, val)
			return
		}
		for i, el := range arr {
			v.single(fmt.Sprintf("%s[%d]", p, i), el, a, nil)
		}
		return
	}
	v.single(p, val, a, parent)
}

func (v *validation) single(p string, val any, a map[string]any, parent map[string]any) {
	typ, _ := a["type"].(string)
	if !strings.HasSuffix(typ, "_t") {
		m, ok := val.(map[string]any)
		if !ok {
			v.errorf("%s: %T, want object %s", p, val, typ)
			return
		}
		d, err := v.s.resolve("object", typ)
		if err != nil {
			v.errorf("%s: %v", p, err)
			return
		}
		v.object(p, m, d)
		return
	}
	v.primitive(p, val, typ)
	name := path.Base(strings.ReplaceAll(p, ".", "/"))
	if i := strings.IndexByte(name, '['); i >= 0 {
		name = name[:i]
	}
	enum, _ := a["enum"].(map[string]any)
	if len(enum) == 0 || name == "class_uid" || name == "category_uid" {
		return // checked against the class in validate
	}
	key := fmt.Sprint(val)
	e, ok := enum[key].(map[string]any)
	if !ok {
		v.errorf("%s: %v is no value of the enum (%v)", p, val, keys(enum))
		return
	}
	sib, _ := a["sibling"].(string)
	if sibVal, ok := parent[sib]; ok && sib != "" && key != "99" && sibVal != e["caption"] {
		v.errorf("%s: sibling %s is %q, want the caption %q", p, sib, sibVal, e["caption"])
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// primitive checks val against a type of the dictionary and its super
// type: JSON kind, max_len, regex, range, values.
func (v *validation) primitive(p string, val any, typ string) {
	t, ok := v.s.types[typ]
	if !ok {
		v.errorf("%s: type %s is not in the dictionary", p, typ)
		return
	}
	base := typ
	chain := []map[string]any{t}
	if super, ok := t["type"].(string); ok {
		base = super
		chain = append(chain, v.s.types[super])
	}
	switch base {
	case "string_t":
		str, ok := val.(string)
		if !ok {
			v.errorf("%s: %T, want %s", p, val, typ)
			return
		}
		for _, c := range chain {
			if ml, ok := c["max_len"]; ok && len(str) > num(ml) {
				v.errorf("%s: %d bytes, %s allows %v", p, len(str), typ, ml)
				break
			}
		}
		if re, ok := t["regex"].(string); ok {
			if !v.s.regexp(re).MatchString(str) {
				v.errorf("%s: %q does not match the regex of %s", p, str, typ)
			}
		}
	case "integer_t", "long_t":
		n, ok := val.(json.Number)
		if !ok {
			v.errorf("%s: %T, want %s", p, val, typ)
			return
		}
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			if _, ok := new(big.Int).SetString(string(n), 10); !ok || base == "integer_t" {
				v.errorf("%s: %s is not a %s", p, n, typ)
			}
			return
		}
		if r, ok := t["range"].([]any); ok && (i < int64(num(r[0])) || i > int64(num(r[1]))) {
			v.errorf("%s: %d outside the range %v of %s", p, i, r, typ)
		}
	case "float_t":
		if _, ok := val.(json.Number); !ok {
			v.errorf("%s: %T, want %s", p, val, typ)
		}
	case "boolean_t":
		if _, ok := val.(bool); !ok {
			v.errorf("%s: %T, want %s", p, val, typ)
		}
	case "json_t":
	default:
		v.errorf("%s: no check for type %s", p, typ)
	}
}

func (s *Schema) regexp(re string) *regexp.Regexp {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.regexps[re]
	if !ok {
		r = regexp.MustCompile(re)
		s.regexps[re] = r
	}
	return r
}
