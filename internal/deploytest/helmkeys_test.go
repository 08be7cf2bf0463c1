package deploytest

import (
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/svcexport/collector/internal/config"
	"github.com/svcexport/collector/internal/secret"
)

// codeConfigKeys returns, from config.Config, the key paths of every secret
// (a field of type secret.Secret) and of every file key (a string whose key
// ends in _file), split as the chart's files/config-keys.yaml splits them:
// global paths, and paths inside a sink block ("sink", or an entry of
// "sinks", which has the same type).
func codeConfigKeys() (secrets, files map[string][]string) {
	secrets, files = map[string][]string{}, map[string][]string{}
	secretType := reflect.TypeOf(secret.Secret{})
	add := func(m map[string][]string, p string) {
		if rest, ok := strings.CutPrefix(p, "sink."); ok {
			m["sink"] = append(m["sink"], rest)
		} else {
			m["global"] = append(m["global"], p)
		}
	}
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Map {
			t = t.Elem()
			prefix = join(prefix, "default")
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := strings.Split(f.Tag.Get("koanf"), ",")[0]
			if tag == "" || tag == "-" || !f.IsExported() {
				continue
			}
			p := join(prefix, tag)
			switch {
			case f.Type == secretType:
				add(secrets, p)
			case f.Type.Kind() == reflect.String && strings.HasSuffix(tag, "_file"):
				add(files, p)
			case f.Type.Kind() == reflect.Slice:
				// "sinks" holds sink blocks, checked as "sink"'s; no other
				// list holds a secret or a file.
			default:
				walk(f.Type, p)
			}
		}
	}
	walk(reflect.TypeOf(config.Config{}), "")
	for _, m := range []map[string][]string{secrets, files} {
		for k := range m {
			sort.Strings(m[k])
		}
	}
	return secrets, files
}

// The chart refuses every secret in config and every file on no volume by
// the lists of files/config-keys.yaml (deploy/helm/test renders each case):
// they must be the code's, so that a new secret or file key of the
// configuration cannot slip into a ConfigMap or point at nothing.
func TestHelmChartChecksEverySecretAndFileKeyOfTheConfig(t *testing.T) {
	var chart struct {
		Secrets map[string][]string `yaml:"secrets"`
		Files   map[string][]string `yaml:"files"`
	}
	if err := yaml.Unmarshal(read(t, chartDir+"/files/config-keys.yaml"), &chart); err != nil {
		t.Fatal(err)
	}
	secrets, files := codeConfigKeys()
	if len(secrets["global"]) == 0 || len(secrets["sink"]) == 0 || len(files["sink"]) == 0 {
		t.Fatalf("the walk found too little: secrets %v, files %v", secrets, files)
	}
	for what, pair := range map[string][2]map[string][]string{"secrets": {chart.Secrets, secrets}, "files": {chart.Files, files}} {
		for _, part := range []string{"global", "sink"} {
			have := slices.Sorted(slices.Values(pair[0][part]))
			if want := pair[1][part]; !slices.Equal(have, want) {
				t.Errorf("%s/files/config-keys.yaml %s.%s = %v, the code's are %v", chartDir, what, part, have, want)
			}
		}
	}
	// The chart's message tells to use KEY_file instead: it must exist.
	for part, keys := range secrets {
		for _, k := range keys {
			mustf(t, slices.Contains(files[part], k+"_file"), "secret %s (%s) has no %s_file key, which the chart's message names", k, part, k)
		}
	}
}

// mustf reports a failure when ok is false.
func mustf(t testing.TB, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Errorf(format, args...)
	}
}

// The chart's README lists every value of values.yaml, and no other.
func TestHelmChartReadmeListsEveryValue(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal(read(t, chartDir+"/values.yaml"), &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	var walk func(n *yaml.Node, prefix string)
	walk = func(n *yaml.Node, prefix string) {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, n.Content[i+1]
			p := join(prefix, k)
			if v.Kind == yaml.MappingNode && helmStructured[p] {
				walk(v, p)
				continue
			}
			want[p] = true
		}
	}
	walk(doc.Content[0], "")
	readme := string(read(t, chartDir+"/README.md"))
	have := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllStringSubmatch(readme, -1) {
		have[m[1]] = true
	}
	for _, k := range sortedKeys(want) {
		mustf(t, have[k], "%s/README.md does not list the value %s", chartDir, k)
	}
	for _, k := range sortedKeys(have) {
		mustf(t, want[k], "%s/README.md lists %s, which values.yaml does not have", chartDir, k)
	}
}

// helmStructured are the chart's own structured values, documented key by
// key; the others (config, resources, securityContexts, probes, ...) are
// the collector's or Kubernetes' and documented there.
var helmStructured = map[string]bool{
	"image": true, "secret": true, "persistence": true, "serviceMonitor": true, "prometheusRule": true, "service": true,
	"podDisruptionBudget": true, "networkPolicy": true, "grafanaDashboard": true, "test": true, "serviceAccount": true,
}
