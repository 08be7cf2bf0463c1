package ocsftest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// SchemaDir is where the OCSF 1.3.0 schema files the validator needs sit,
// relative to the module root: copied from github.com/ocsf/ocsf-schema
// (see internal/ocsf/testdata/README.md).
const SchemaDir = "internal/ocsf/testdata/ocsf-schema-1.3.0"

// Schema is a validator of OCSF events against the schema's source files,
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
type Schema struct {
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
	theSchema  *Schema
	schemaErr  error
)

// Load reads the vendored schema once per test binary (the module root is
// found from the working directory, which go test sets to the package's
// directory) and fails tb when it cannot.
func Load(tb testing.TB) *Schema {
	tb.Helper()
	schemaOnce.Do(func() {
		var dir string
		if dir, schemaErr = schemaPath(); schemaErr == nil {
			theSchema, schemaErr = Read(os.DirFS(dir))
		}
	})
	if schemaErr != nil {
		tb.Fatalf("load OCSF schema: %v", schemaErr)
	}
	return theSchema
}

// schemaPath finds SchemaDir in the module.
func schemaPath() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, filepath.FromSlash(SchemaDir)), nil
}

// moduleRoot is the nearest directory above the working directory that
// holds go.mod.
func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("no go.mod above %s", wd)
		}
	}
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

// Read builds a validator from the schema files in fsys (the layout of
// the ocsf-schema repository: dictionary.json, categories.json, events/,
// objects/, profiles/, includes/).
func Read(fsys fs.FS) (*Schema, error) {
	s := &Schema{fsys: fsys, events: map[string]map[string]any{}, objects: map[string]map[string]any{},
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

func (s *Schema) resolve(kind, name string) (*definition, error) {
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
		return nil, fmt.Errorf("%s %q is not in %s (vendor it: internal/ocsf/testdata/README.md)", kind, name, SchemaDir)
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
func (s *Schema) attr(d *definition, name string) map[string]any { return d.attrs[name] }
