package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type testSection struct {
	Limit  int           `koanf:"limit"`
	Period time.Duration `koanf:"period"`
	Name   string        `koanf:"name"`
	Tags   []string      `koanf:"tags"`
}

type testConfig struct {
	API     testSection            `koanf:"api"`
	Sources map[string]testSection `koanf:"sources"`
	Flag    bool                   `koanf:"flag"`
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// loadErr is load's problems joined, or its error.
func loadErr(path string, environ []string, dst any) error {
	res, err := load(path, environ, dst, nil)
	if err != nil {
		return err
	}
	return errors.Join(res.problems...)
}

func TestLoadLayersDefaultsFileAndEnvironment(t *testing.T) {
	cfg := testConfig{API: testSection{Limit: 480, Period: time.Hour, Name: "default"}}
	p := writeFile(t, "api:\n  period: 7d\n  name: fromfile\nsources:\n  dns:\n    limit: 3\n")
	env := []string{"COLLECTOR_API__NAME=fromenv", "COLLECTOR_SOURCES__DNS__PERIOD=90s", "COLLECTOR_API__TAGS=[a, b]", "OTHER=1"}
	if err := loadErr(p, env, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.API.Limit != 480 || cfg.API.Period != 7*24*time.Hour || cfg.API.Name != "fromenv" ||
		cfg.Sources["dns"].Limit != 3 || cfg.Sources["dns"].Period != 90*time.Second || strings.Join(cfg.API.Tags, ",") != "a,b" {
		t.Fatalf("got %+v", cfg)
	}
}

func TestLoadNamesTheWrongKey(t *testing.T) {
	cases := []struct {
		name, yaml string
		env        []string
		want       string
	}{
		{"an unknown key names its path and a suggestion", "api:\n  limt: 3\n", nil, `api.limt: unknown key (did you mean "limit"?)`},
		{"an unknown top-level section is refused", "apii: {}\n", nil, `apii: unknown key`},
		{"a wrong type names the key", "api:\n  limit: [1, 2]\n", nil, `api.limit`},
		{"a duration without unit is refused", "api:\n  period: 7\n", nil, `api.period`},
		{"a bad duration is refused", "api:\n  period: soon\n", nil, `api.period`},
		{"an unknown environment key is refused", "", []string{"COLLECTOR_API__SECRT=x"}, `api.secrt: unknown key`},
		{"a wrong type from the environment names the key", "", []string{"COLLECTOR_API__LIMIT=many"}, `api.limit`},
		{"a value used as a section is refused", "flag:\n  x: 1\n", nil, `flag: is a value`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var cfg testConfig
			p := ""
			if c.yaml != "" {
				p = writeFile(t, c.yaml)
			}
			err := loadErr(p, c.env, &cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestParseDurationAcceptsDays(t *testing.T) {
	for in, want := range map[string]time.Duration{"7d": 7 * 24 * time.Hour, "1d12h": 36 * time.Hour, "90s": 90 * time.Second, "0.5d": 12 * time.Hour} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("%s: %v %v", in, got, err)
		}
	}
	if _, err := ParseDuration("7 days"); err == nil {
		t.Error("7 days must be refused")
	}
}

func TestLoadKeepsAYAMLTimestampForAStringKey(t *testing.T) {
	var cfg testConfig
	if err := loadErr(writeFile(t, "api:\n  name: 2026-11-20T10:00:00Z\n"), nil, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.API.Name != "2026-11-20T10:00:00Z" {
		t.Fatalf("got %q", cfg.API.Name)
	}
}
