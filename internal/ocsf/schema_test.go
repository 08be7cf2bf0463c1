package ocsf_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// schemaDir holds the OCSF 1.3.0 schema files the validator needs, copied
// from github.com/ocsf/ocsf-schema (see testdata/README.md).
const schemaDir = "testdata/ocsf-schema-1.3.0"

// schema is a validator of OCSF events against the schema's source files,
// written after the OCSF server's validator (validator2.ex) and compiler
// (ocsf-lib-py): a class or object is resolved from its own attributes,
// then its $include files (a profile's attributes marked with the
// profile), then its parent (extends), then the dictionary, each filling
// only what the more specific one leaves out (enum values merge). It
// checks what the brief asks and the server checks: required attributes
// (those of a profile only when metadata.profiles names it), attributes
// unknown to the class or object (a profile's count as unknown unless
// named), the types of values (primitive types with their max_len, regex
// and range, objects recursively, arrays), enum values and their sibling
// captions, constraints (at_least_one, just_one), class_uid, category_uid
// and type_uid. It is stricter than the server in one way: a regex
// mismatch is an error, not a warning.
type schema struct {
	fsys       fs.FS
	dict       map[string]map[string]any
	types      map[string]map[string]any
	categories map[string]category
	events     map[string]map[string]any // by name
	objects    map[string]map[string]any // by name
	profiles   map[string]bool

	mu       sync.Mutex
	resolved map[string]*definition // "event/name", "object/name"
	classes  map[int]*definition
	regexps  map[string]*regexp.Regexp
	loaded   map[string]bool // object files used, for testdata/README.md
}

type category struct {
	uid     int
	caption string
}

// definition is a resolved class or object.
type definition struct {
	name        string
	caption     string
	uid         int // classes: class_uid
	category    category
	attrs       map[string]map[string]any // completed from the dictionary
	required    []string                  // sorted
	constraints map[string]any
}

var (
	schemaOnce sync.Once
	theSchema  *schema
	schemaErr  error
)

// loadSchema reads the vendored schema once per test binary.
func loadSchema(t testing.TB) *schema {
	t.Helper()
	schemaOnce.Do(func() { theSchema, schemaErr = readSchema(os.DirFS(schemaDir)) })
	if schemaErr != nil {
		t.Fatalf("load OCSF schema: %v", schemaErr)
	}
	return theSchema
}

func readJSON(fsys fs.FS, name string) (map[string]any, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return m, nil
}

func readSchema(fsys fs.FS) (*schema, error) {
	s := &schema{fsys: fsys, events: map[string]map[string]any{}, objects: map[string]map[string]any{},
		profiles: map[string]bool{}, categories: map[string]category{}, resolved: map[string]*definition{},
		classes: map[int]*definition{}, regexps: map[string]*regexp.Regexp{}, loaded: map[string]bool{}}
	dict, err := readJSON(fsys, "dictionary.json")
	if err != nil {
		return nil, err
	}
	s.dict = toAttrs(dict["attributes"])
	s.types = toAttrs(dict["types"].(map[string]any)["attributes"])
	cats, err := readJSON(fsys, "categories.json")
	if err != nil {
		return nil, err
	}
	for name, c := range cats["attributes"].(map[string]any) {
		cm := c.(map[string]any)
		s.categories[name] = category{uid: num(cm["uid"]), caption: cm["caption"].(string)}
	}
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
			return err
		}
		dir := strings.SplitN(p, "/", 2)[0]
		if dir != "events" && dir != "objects" && dir != "profiles" {
			return nil
		}
		m, err := readJSON(fsys, p)
		if err != nil {
			return err
		}
		m["$path"] = p
		name, _ := m["name"].(string)
		switch dir {
		case "events":
			s.events[name] = m
		case "objects":
			s.objects[name] = m
		case "profiles":
			s.profiles[name] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for name, e := range s.events {
		if _, ok := e["uid"]; !ok {
			continue
		}
		d, err := s.resolve("event", name)
		if err != nil {
			return nil, err
		}
		s.classes[d.uid] = d
	}
	return s, nil
}

func toAttrs(v any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for k, a := range v.(map[string]any) {
		if m, ok := a.(map[string]any); ok {
			out[k] = m
		}
	}
	return out
}

func num(v any) int {
	n, _ := strconv.Atoi(fmt.Sprint(v))
	return n
}

// fill copies into left what right has and left lacks, recursively for
// maps; left wins everywhere else (an explicit null in left included).
func fill(left, right map[string]any) map[string]any {
	out := make(map[string]any, len(left)+len(right))
	for k, v := range left {
		out[k] = v
	}
	for k, rv := range right {
		lv, ok := out[k]
		if !ok {
			out[k] = rv
			continue
		}
		lm, lok := lv.(map[string]any)
		rm, rok := rv.(map[string]any)
		if lok && rok {
			out[k] = fill(lm, rm)
		}
	}
	return out
}

func (s *schema) resolve(kind, name string) (*definition, error) {
	s.mu.Lock()
	d := s.resolved[kind+"/"+name]
	s.mu.Unlock()
	if d != nil {
		return d, nil
	}
	src := s.objects[name]
	if kind == "event" {
		src = s.events[name]
	}
	if src == nil {
		return nil, fmt.Errorf("%s %q is not in %s (vendor it: testdata/README.md)", kind, name, schemaDir)
	}
	attrs := map[string]map[string]any{}
	var includes []any
	if a, ok := src["attributes"].(map[string]any); ok {
		for k, v := range a {
			if k == "$include" {
				includes = v.([]any)
				continue
			}
			attrs[k] = v.(map[string]any)
		}
	}
	for _, inc := range includes {
		im, err := readJSON(s.fsys, inc.(string))
		if err != nil {
			return nil, err
		}
		profile, _ := im["name"].(string)
		isProfile := im["meta"] == "profile"
		for k, v := range toAttrs(im["attributes"]) {
			if isProfile {
				v = fill(v, map[string]any{"profile": profile})
			}
			attrs[k] = fill(attrs[k], v)
		}
	}
	d = &definition{name: name, attrs: attrs}
	d.caption, _ = src["caption"].(string)
	if c, ok := src["constraints"].(map[string]any); ok {
		d.constraints = c
	}
	catName, _ := src["category"].(string)
	if parent, ok := src["extends"].(string); ok {
		p, err := s.resolve(kind, parent)
		if err != nil {
			return nil, err
		}
		for k, v := range p.attrs {
			attrs[k] = fill(attrs[k], v)
		}
		if _, ok := src["constraints"]; !ok {
			d.constraints = p.constraints
		}
		if catName == "" {
			d.category = p.category
		}
	}
	if catName != "" {
		d.category = s.categories[catName]
	}
	for k, a := range attrs {
		attrs[k] = fill(a, s.dict[k])
		if attrs[k]["requirement"] == "required" {
			d.required = append(d.required, k)
		}
	}
	sort.Strings(d.required)
	if u, ok := src["uid"]; ok && kind == "event" {
		d.uid = d.category.uid*1000 + num(u)
	}
	if kind == "object" {
		s.mu.Lock()
		s.loaded[src["$path"].(string)] = true
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.resolved[kind+"/"+name] = d
	s.mu.Unlock()
	return d, nil
}

// attr returns attribute name of d, or nil.
func (s *schema) attr(d *definition, name string) map[string]any { return d.attrs[name] }

// validate checks one event and returns what is wrong with it.
func (s *schema) validate(event []byte) []string {
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
		return []string{fmt.Sprintf("class_uid %v: no such class in %s", ev["class_uid"], schemaDir)}
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
	s        *schema
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

func (s *schema) regexp(re string) *regexp.Regexp {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.regexps[re]
	if !ok {
		r = regexp.MustCompile(re)
		s.regexps[re] = r
	}
	return r
}
