package deploytest

import (
	"bytes"
	"encoding"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/svcexport/collector/internal/config"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// Stamps the release build gets in these tests.
const (
	testVersion = "v0.0.0-deploytest"
	testCommit  = "0123456789abcdef0123456789abcdef01234567"
	testDate    = "2026-01-02T03:04:05Z"
)

// The image's default command line (ENTRYPOINT + CMD), which the
// Kubernetes and Compose files rely on (they mount the configuration at its
// --config path).
var wantEntrypoint = []string{"/collector", "run", "--config", "/etc/collector/collector.yaml"}

// TestMain runs the package under the harness, which removes the release
// build after the tests.
func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

// root returns the repository's top directory.
func root(t testing.TB) string {
	t.Helper()
	return harness.RepoRoot(t)
}

// read returns the file at rel (relative to the repository).
func read(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// yamlDocs decodes every document of a YAML stream.
func yamlDocs(t testing.TB, name string, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if err != nil {
			if err.Error() == "EOF" {
				return out
			}
			t.Fatalf("%s: %v", name, err)
		}
		if m != nil {
			out = append(out, m)
		}
	}
}

// yamlDoc decodes a single-document YAML file.
func yamlDoc(t testing.TB, rel string) map[string]any {
	t.Helper()
	docs := yamlDocs(t, rel, read(t, rel))
	if len(docs) != 1 {
		t.Fatalf("%s: %d YAML documents, want 1", rel, len(docs))
	}
	return docs[0]
}

// get walks m along path ("a.b.c"; "[i]" indexes a list) and returns the
// value, nil when any step is missing.
func get(v any, path string) any {
	if path == "" {
		return v
	}
	for _, step := range strings.Split(path, ".") {
		name, idx, hasIdx := strings.Cut(step, "[")
		if name != "" {
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[name]
		}
		if hasIdx {
			i, err := strconv.Atoi(strings.TrimSuffix(idx, "]"))
			l, ok := v.([]any)
			if err != nil || !ok || i >= len(l) {
				return nil
			}
			v = l[i]
		}
	}
	return v
}

func str(v any, path string) string {
	switch x := get(v, path).(type) {
	case string:
		return x
	case nil:
		return ""
	default:
		return fmt.Sprint(x)
	}
}

func list(v any, path string) []any {
	l, _ := get(v, path).([]any)
	return l
}

func mapAt(v any, path string) map[string]any {
	m, _ := get(v, path).(map[string]any)
	return m
}

// loadConfig runs config.Load, the collector's own loader and validation, on
// text (written to a temporary file named like name) with env as the whole
// environment.
func loadConfig(t testing.TB, name string, text []byte, env map[string]string) (config.Config, error) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, filepath.Base(name))
	if err := os.WriteFile(p, text, 0o600); err != nil {
		t.Fatal(err)
	}
	return config.Load(p, environ(env))
}

// mustLoad loads a shipped configuration (configs/, the Helm chart's, the
// kustomize base's, the image's built-in one, Compose's, systemd's) with
// the environment its deployment sets, and checks that it serves no /tap
// (noOpenTap).
func mustLoad(t testing.TB, name string, text []byte, env map[string]string) config.Config {
	t.Helper()
	cfg, err := loadConfig(t, name, text, env)
	if err != nil {
		t.Fatalf("%s does not load with the environment a deployment sets (%s):\n%v", name, strings.Join(sortedKeys(env), ", "), err)
	}
	noOpenTap(t, name, text, env, cfg)
	return cfg
}

// noOpenTap checks that a shipped configuration leaves /tap off (issue 29
// item 1: with it on, whoever reaches metrics.listen reads every record),
// and that turning it on without a token is refused where metrics.listen
// is not loopback: a deployment cannot open it to the network by one
// variable.
func noOpenTap(t testing.TB, name string, text []byte, env map[string]string, cfg config.Config) {
	t.Helper()
	if cfg.Metrics.Tap.Enabled {
		t.Errorf("%s turns /tap on (metrics.tap.enabled): no shipped deployment may; an operator turns it on, with a token file", name)
	}
	if cfg.Metrics.Listen == "" || config.IsLoopback(cfg.Metrics.Listen) {
		return
	}
	on := map[string]string{"COLLECTOR_METRICS__TAP__ENABLED": "true"}
	for k, v := range env {
		if k != "COLLECTOR_METRICS__TAP__TOKEN_FILE" {
			on[k] = v
		}
	}
	if cfg.Metrics.Tap.TokenFile != "" {
		t.Errorf("%s sets metrics.tap.token_file: ship none (the operator's Secret holds it)", name)
	}
	if _, err := loadConfig(t, name, text, on); err == nil || !strings.Contains(err.Error(), "metrics.tap.token_file: must be set") {
		t.Errorf("%s with COLLECTOR_METRICS__TAP__ENABLED=true and no token on %s: err = %v, want it refused, naming metrics.tap.token_file", name, cfg.Metrics.Listen, err)
	}
}

func environ(env map[string]string) []string {
	var out []string
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// configKeys returns every key path of the configuration that the code
// knows, from the koanf tags of config.Config: values (including lists and
// secrets) are leaves; a map of structs contributes the keys of its "default"
// entry (sources.default.*); a map of anything (simulator.settings) is a
// leaf, its keys belong to another program.
func configKeys() []string {
	var out []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if isLeaf(t) {
			out = append(out, prefix)
			return
		}
		switch t.Kind() {
		case reflect.Struct:
			for i := 0; i < t.NumField(); i++ {
				f := t.Field(i)
				tag := strings.Split(f.Tag.Get("koanf"), ",")[0]
				if tag == "" || tag == "-" || !f.IsExported() {
					continue
				}
				walk(f.Type, join(prefix, tag))
			}
		case reflect.Map:
			elem := t.Elem()
			for elem.Kind() == reflect.Pointer {
				elem = elem.Elem()
			}
			if elem.Kind() == reflect.Struct && !isLeaf(elem) {
				walk(elem, join(prefix, "default"))
				return
			}
			out = append(out, prefix)
		default:
			out = append(out, prefix)
		}
	}
	walk(reflect.TypeOf(config.Config{}), "")
	sort.Strings(out)
	return out
}

var (
	textUnmarshaler = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
	durationType    = reflect.TypeOf(time.Duration(0))
)

func isLeaf(t reflect.Type) bool {
	if t == durationType || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return true
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return false
	}
	return true
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// yamlKeys returns the dotted paths of every mapping key in a YAML file
// (not descending into lists).
func yamlKeys(t testing.TB, name string, b []byte) map[string]bool {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	out := map[string]bool{}
	var walk func(n *yaml.Node, prefix string)
	walk = func(n *yaml.Node, prefix string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, prefix)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := join(prefix, n.Content[i].Value)
				out[k] = true
				walk(n.Content[i+1], k)
			}
		}
	}
	walk(&doc, "")
	return out
}

// diffValues lists the koanf key paths where a and b (values of one
// configuration type) differ; nil and empty lists and maps are equal.
func diffValues(a, b reflect.Value, prefix string) []string {
	if a.Kind() == reflect.Pointer {
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return []string{prefix}
			}
			return nil
		}
		return diffValues(a.Elem(), b.Elem(), prefix)
	}
	t := a.Type()
	if isLeaf(t) && t.Kind() != reflect.Slice {
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			return []string{prefix}
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		var out []string
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := strings.Split(f.Tag.Get("koanf"), ",")[0]
			if tag == "" || tag == "-" || !f.IsExported() {
				continue
			}
			out = append(out, diffValues(a.Field(i), b.Field(i), join(prefix, tag))...)
		}
		return out
	case reflect.Slice, reflect.Map:
		if a.Len() == 0 && b.Len() == 0 {
			return nil
		}
		if t.Kind() == reflect.Map {
			var out []string
			for _, k := range a.MapKeys() {
				bv := b.MapIndex(k)
				if !bv.IsValid() {
					out = append(out, join(prefix, fmt.Sprint(k.Interface())))
					continue
				}
				out = append(out, diffValues(a.MapIndex(k), bv, join(prefix, fmt.Sprint(k.Interface())))...)
			}
			for _, k := range b.MapKeys() {
				if !a.MapIndex(k).IsValid() {
					out = append(out, join(prefix, fmt.Sprint(k.Interface())))
				}
			}
			return out
		}
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			return []string{prefix}
		}
		return nil
	}
	if !reflect.DeepEqual(a.Interface(), b.Interface()) {
		return []string{prefix}
	}
	return nil
}

// releaseBinary returns cmd/collector built with scripts/release-build.sh
// (the release command, stamped with the test values), once per test run.
func releaseBinary(t testing.TB) string {
	t.Helper()
	return harness.ReleaseCollector(t, harness.Stamp{Version: testVersion, Commit: testCommit, Date: testDate})
}

// runFlags returns the flags "collector run --help" lists, with whether each
// takes a value.
func runFlags(t testing.TB) map[string]bool {
	t.Helper()
	out, err := exec.Command(releaseBinary(t), "run", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("collector run --help: %v\n%s", err, out)
	}
	flags := map[string]bool{}
	// cobra's help: "  -c, --config string   ..." or "      --once   ...";
	// a flag is known by its short and its long name.
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-(\w), )?--(\w[\w-]*)( \w+)?`).FindAllStringSubmatch(string(out), -1) {
		flags[m[2]] = m[3] != ""
		if m[1] != "" {
			flags[m[1]] = m[3] != ""
		}
	}
	if len(flags) == 0 {
		t.Fatalf("no flags in collector run --help:\n%s", out)
	}
	return flags
}

// checkRunArgs checks a command line "collector run ..." (without the
// binary) against the flags the binary accepts and returns the --config
// value.
func checkRunArgs(t testing.TB, where string, args []string) string {
	t.Helper()
	if len(args) == 0 || args[0] != "run" {
		t.Errorf("%s: command %q is not \"run ...\"", where, args)
		return ""
	}
	flags := runFlags(t)
	cfg := ""
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			t.Errorf("%s: unexpected argument %q (the collector takes none)", where, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takesValue, ok := flags[name]
		if !ok {
			t.Errorf("%s: flag %q is not one `collector run --help` lists (%v)", where, a, sortedKeys(flags))
			continue
		}
		if takesValue && !hasVal {
			if i+1 >= len(args) {
				t.Errorf("%s: flag %q has no value", where, a)
				continue
			}
			i++
			val = args[i]
		}
		if name == "config" {
			cfg = val
		}
	}
	if cfg == "" {
		t.Errorf("%s: no --config", where)
	}
	return cfg
}

// underDir reports whether path is dir or inside it.
func underDir(path, dir string) bool {
	rel, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
