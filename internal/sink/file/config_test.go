package file

import (
	"strings"
	"testing"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
	kfile "github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"

	"github.com/svcexport/collector/internal/sink/ocsfenc"
)

// loadConfig applies testdata/name over the defaults the way the collector's
// config loader does (koanf, YAML, key sink.file).
func loadConfig(t *testing.T, name string) Config {
	t.Helper()
	k := koanf.New(".")
	if err := k.Load(kfile.Provider("testdata/"+name), yaml.Parser()); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	if err := k.Unmarshal("sink.file", &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestConfigFromYAML(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want Config
	}{
		{"full.yaml", Config{Dir: "/var/lib/collector/out", Path: "{source}/{account}/{yyyy}/{mm}/{dd}", PathTime: PathTimeRecord,
			Retention: RetentionConfig{MaxFiles: 100, MaxBytes: 10 << 30, MaxAge: 7 * 24 * time.Hour}, MaxBytes: 1 << 20, MaxAge: 15 * time.Minute, Gzip: true, FileMode: 0o644, Fsync: false,
			Format: "ocsf", OCSF: ocsfenc.Config{RawData: true, ProductName: "Platform", EdgeProductName: "Edge", VendorName: "Vendor", ProductVersion: "2026.11"}, Delivery: "at_least_once"}},
		{"partial.yaml", Config{Dir: "./out", Path: DefaultPath, PathTime: PathTimeFetched, MaxBytes: 256 << 20, MaxAge: time.Hour, Gzip: true, FileMode: 0o640, Fsync: true,
			Format: "envelope", OCSF: ocsfenc.DefaultConfig(), Delivery: "exactly_once"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got := loadConfig(t, tt.file)
			if got != tt.want {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestInvalidConfigNamesEveryBadKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want []string
	}{
		{"bad.yaml", []string{"sink.file.dir: must not be empty", "sink.file.max_bytes: must be > 0", "sink.file.max_age: must be >= 0", "sink.file.file_mode: 01200 has bits outside 0777",
			`sink.file.format: unknown format "xml" (envelope, ocsf)`, `sink.file.path: "{source}/{day}": unknown placeholder {day}`,
			`sink.file.path_time: unknown time "event" (fetched, record)`,
			"sink.file.retention.max_files: must be >= 0", "sink.file.retention.max_bytes: must be >= 0", "sink.file.retention.max_age: must be >= 0"}},
		{"readonly_mode.yaml", []string{"sink.file.file_mode: 0440 must let the owner read and write"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			err := loadConfig(t, tt.file).Validate()
			if err == nil {
				t.Fatal("Validate accepted it")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestPathTemplatesThatCannotWorkAreRefused(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]string{
		"{source}":                     "must hold {source} and {account}",
		"{source}/x-{account}":         "unknown placeholder {account}",
		"/{source}/{account}":          "relative path",
		"{source}/../{account}":        "'..'",
		"{source}/{account}/.{yyyy}":   "starts with a dot",
		"{source}/{account}/{yyyy":     "unclosed",
		"{source}/{account}/a b":       "literal text",
		"{source}/{account}/{minutes}": "unknown placeholder",
	} {
		c := DefaultConfig()
		c.Path = path
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "sink.file.path: ") || !strings.Contains(err.Error(), want) {
			t.Errorf("path %q: %v, want an error naming sink.file.path with %q", path, err, want)
		}
	}
	for _, path := range []string{DefaultPath, "{source}/{account}/{yyyy}/{mm}/{dd}/{hh}", "{yyyy}/{source}/{account}/dt={yyyy}-{mm}-{dd}"} {
		c := DefaultConfig()
		c.Path = path
		if err := c.Validate(); err != nil {
			t.Errorf("path %q: %v", path, err)
		}
	}
}

func TestDefaultConfigIsValid(t *testing.T) {
	t.Parallel()
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{}, nil, nil); err == nil {
		t.Fatal("New accepted the zero Config")
	}
}
