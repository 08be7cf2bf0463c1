package deploytest

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/svcexport/collector/internal/config"
	"github.com/svcexport/collector/internal/source/catalog"
)

// secretsEnv is what a deployment of the example configurations puts in the
// environment: the secrets, never in the files.
var (
	apiSecret  = map[string]string{"COLLECTOR_API__SECRET": "placeholder-api-secret"}
	edgeToken  = map[string]string{"COLLECTOR_EDGE__TOKEN": "placeholder-edge-token"}
	kafkaPass  = map[string]string{"COLLECTOR_SINK__KAFKA__SASL__PASSWORD": "placeholder-kafka-password"}
	chPassword = map[string]string{"COLLECTOR_SINK__CLICKHOUSE__PASSWORD": "placeholder-clickhouse-password"}
)

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// shippedConfigs lists every file under configs/ with the environment its
// users set.
var shippedConfigs = map[string]map[string]string{
	"configs/collector.yaml":  apiSecret,
	"configs/kafka.yaml":      merge(apiSecret, edgeToken, kafkaPass),
	"configs/clickhouse.yaml": merge(apiSecret, chPassword),
	"configs/demo.yaml":       nil,                         // the in-process simulator brings its credentials
	"configs/multi.yaml":      merge(apiSecret, edgeToken), // the sinks read their passwords from files
	"configs/tenants.yaml": {"COLLECTOR_TENANTS__1__API__SECRET": "s", "COLLECTOR_TENANTS__1__EDGE__TOKEN": "t",
		"INITECH_API_SECRET": "s"}, // the other tenants read theirs from files
}

func TestEveryConfigUnderConfigsLoadsAndValidates(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root(t), "configs", "*.y*ml"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		rel := "configs/" + filepath.Base(f)
		seen[rel] = true
		env, ok := shippedConfigs[rel]
		if !ok {
			t.Errorf("%s is not in shippedConfigs: add it with the environment its users set", rel)
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) { mustLoad(t, rel, read(t, rel), env) })
	}
	for rel := range shippedConfigs {
		if !seen[rel] {
			t.Errorf("%s is listed but missing", rel)
		}
	}
}

func TestTheExamplesNeedTheirSecretsFromTheEnvironment(t *testing.T) {
	// The secrets are not in the files: without the environment they fail
	// validation, naming the key.
	for rel, key := range map[string]string{
		"configs/collector.yaml":  "api.secret",
		"configs/kafka.yaml":      "sink.kafka.sasl.password",
		"configs/clickhouse.yaml": "api.secret",
	} {
		env := map[string]string{}
		for k, v := range shippedConfigs[rel] {
			env[k] = v
		}
		for k := range env {
			if strings.EqualFold(strings.ReplaceAll(strings.TrimPrefix(k, "COLLECTOR_"), "__", "."), key) {
				delete(env, k)
			}
		}
		_, err := loadConfig(t, rel, read(t, rel), env)
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s without the variable for %s: err = %v, want one naming %s", rel, key, err, key)
		}
	}
}

func TestCollectorYAMLNamesEveryKeyOfTheCode(t *testing.T) {
	const rel = "configs/collector.yaml"
	have := yamlKeys(t, rel, read(t, rel))
	var missing []string
	for _, k := range configKeys() {
		if !have[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%s does not name these keys of config.Config (add each with its default and a short comment):\n  %s",
			rel, strings.Join(missing, "\n  "))
	}
}

func TestCollectorYAMLHoldsTheCodeDefaults(t *testing.T) {
	// Every value in the reference file is the built-in default, except the
	// keys that have none; a default changed in the code must be changed
	// there too.
	const rel = "configs/collector.yaml"
	cfg := mustLoad(t, rel, read(t, rel), apiSecret)
	def := config.Default()
	noDefault := map[string]bool{"api.base_url": true, "api.key_id": true, "api.secret": true}
	def.API.BaseURL, def.API.KeyID, def.API.Secret = cfg.API.BaseURL, cfg.API.KeyID, cfg.API.Secret
	if def.Sources == nil {
		def.Sources = catalog.SourcesConfig{}
	}
	for _, k := range diffValues(reflect.ValueOf(cfg), reflect.ValueOf(def), "") {
		if !noDefault[k] {
			t.Errorf("%s: %s differs from the code's default (config.Default)", rel, k)
		}
	}
}
