package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcexport/collector/internal/sink/kafka"
)

// base is a configuration that validates without a server: the simulator
// stands in for the API.
const base = "simulator: {enabled: true}\naccounts: [acme]\n"

func loadYAML(t *testing.T, y string, env ...string) (Config, error) {
	t.Helper()
	return Load(writeFile(t, base+y), env)
}

func TestSinksListsEveryDestinationEachFromItsDefaults(t *testing.T) {
	dir := t.TempDir()
	cfg, err := loadYAML(t, `
sinks:
  - name: siem
    type: kafka
    kafka:
      brokers: [k1:9092]
      compression: lz4
  - type: clickhouse
    clickhouse: {database: lake}
  - name: archive
    type: file
    file: {dir: `+filepath.Join(dir, "a")+`}
  - name: archive-2
    type: file
    file:
      dir: `+filepath.Join(dir, "b")+`
      max_age: 2h
`)
	if err != nil {
		t.Fatal(err)
	}
	sinks := cfg.Sinks()
	if len(sinks) != 4 {
		t.Fatalf("%d sinks, want 4", len(sinks))
	}
	var got []string
	for _, s := range sinks {
		got = append(got, s.Key()+"="+s.SinkName()+"/"+s.Type)
	}
	if want := "sinks[0]=siem/kafka sinks[1]=clickhouse/clickhouse sinks[2]=archive/file sinks[3]=archive-2/file"; strings.Join(got, " ") != want {
		t.Fatalf("sinks %s, want %s", strings.Join(got, " "), want)
	}
	// An entry starts from the defaults of a sink block, not from zero.
	def := DefaultSink()
	if k := sinks[0].Kafka; k.Compression != "lz4" || k.Acks != def.Kafka.Acks || k.Topic != kafka.DefaultConfig().Topic || k.MaxBufferedRecords != def.Kafka.MaxBufferedRecords {
		t.Errorf("kafka entry %+v: the keys it leaves out must keep their defaults", k)
	}
	if c := sinks[1].ClickHouse; c.Database != "lake" || c.BatchRows != def.ClickHouse.BatchRows || c.Protocol != def.ClickHouse.Protocol {
		t.Errorf("clickhouse entry %+v", c)
	}
	if f := sinks[3].File; !f.Fsync || f.MaxBytes != def.File.MaxBytes || f.MaxAge.Hours() != 2 {
		t.Errorf("file entry %+v", f)
	}
}

func TestTheSinkSectionIsAListOfOneNamedAfterItsType(t *testing.T) {
	cfg, err := loadYAML(t, "sink:\n  type: kafka\n  kafka: {brokers: [k1:9092]}\n")
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Sinks()
	if len(s) != 1 || s[0].SinkName() != "kafka" || s[0].Key() != "sink" || s[0].Kafka.Brokers[0] != "k1:9092" {
		t.Fatalf("sinks %+v", s)
	}
	// No sink section at all: the default file sink.
	cfg, err = loadYAML(t, "")
	if err != nil {
		t.Fatal(err)
	}
	if s := cfg.Sinks(); len(s) != 1 || s[0].SinkName() != "file" || s[0].File.Dir != DefaultSink().File.Dir {
		t.Fatalf("default sinks %+v", s)
	}
	// sink.name renames the one sink.
	cfg, err = loadYAML(t, "sink:\n  name: archive\n  type: stdout\n")
	if err != nil || cfg.Sinks()[0].SinkName() != "archive" {
		t.Fatalf("sink.name: %v %+v", err, cfg.Sinks())
	}
}

// Every problem of a sink names its key path: sink.X for the one-sink
// section, sinks[i].X for an entry of the list.
func TestSinkErrorsNameTheirKeyPath(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, yaml string
		env        []string
		want       []string
	}{
		{"both forms", "sink: {type: stdout}\nsinks: [{type: file}]\n", nil,
			[]string{"sinks: set together with sink"}},
		{"both forms, sink from the environment", "sinks: [{type: stdout}]\n", []string{"COLLECTOR_SINK__TYPE=kafka"},
			[]string{"sinks: set together with sink"}},
		{"a bad entry of the list", "sinks:\n  - {type: stdout}\n  - {name: siem, type: kafka}\n", nil,
			[]string{"sinks[1].kafka.brokers: "}},
		{"the one-sink section keeps its keys", "sink: {type: kafka}\n", nil,
			[]string{"sink.kafka.brokers: "}},
		{"an unknown key of an entry", "sinks:\n  - {type: kafka, kafka: {brokerz: [a:1]}}\n", nil,
			[]string{`sinks[0].kafka.brokerz: unknown key (did you mean "brokers"?)`}},
		{"an unknown key of the section", "sink: {type: kafka, kafka: {brokerz: [a:1]}}\n", nil,
			[]string{`sink.kafka.brokerz: unknown key (did you mean "brokers"?)`}},
		{"a wrong type in an entry", "sinks:\n  - {type: file, file: {max_bytes: lots}}\n", nil,
			[]string{"sinks[0].file.max_bytes"}},
		{"a duration without unit in an entry", "sinks:\n  - {type: file, file: {max_age: 7}}\n", nil,
			[]string{"sinks[0].file.max_age"}},
		{"a Kafka key of an unknown source in an entry", "sinks:\n  - {type: kafka, kafka: {brokers: [a:1], keys: {dnss: id}}}\n", nil,
			[]string{`sinks[0].kafka.keys.dnss: unknown source "dnss"`}},
		{"a bad Kafka key of a source from the environment", "sink: {type: kafka, kafka: {brokers: [a:1]}}\n", []string{"COLLECTOR_SINK__KAFKA__KEYS__DNS=fqdn"},
			[]string{`sink.kafka.keys.dns: unknown value "fqdn" (id, entity)`}},
		{"an entry that is no mapping", "sinks: [kafka]\n", nil,
			[]string{"sinks[0]: must be a mapping"}},
		{"an empty entry", "sinks: [{type: stdout}, ~]\n", nil,
			[]string{"sinks[1]: is empty"}},
		{"a mapping instead of a list", "sinks:\n  type: file\n", nil,
			[]string{"sinks: must be a list of sinks"}},
		{"an entry without type", "sinks:\n  - {name: x}\n", nil,
			[]string{"sinks[0].type: must be set"}},
		{"an unknown type", "sinks:\n  - {type: s3}\n", nil,
			[]string{`sinks[0].type: unknown sink "s3"`}},
		{"a bad name", "sinks:\n  - {name: Siem!, type: stdout}\n", nil,
			[]string{`sinks[0].name: "Siem!"`}},
		{"two sinks of one name", "sinks:\n  - {name: a, type: stdout}\n  - {name: a, type: file}\n", nil,
			[]string{`sinks[1].name: "a" is the name of sinks[0] too`}},
		{"two sinks of one type without names", "sinks:\n  - {type: kafka, kafka: {brokers: [a:1]}}\n  - {type: kafka, kafka: {brokers: [b:1]}}\n", nil,
			[]string{`sinks[1].name: "kafka" is the name of sinks[0] too`}},
		{"two file sinks in one directory", "sinks:\n  - {name: a, type: file, file: {dir: " + dir + "}}\n  - {name: b, type: file, file: {dir: " + dir + "/}}\n", nil,
			[]string{"sinks[1].file.dir: sinks[0] writes into"}},
		{"two stdout sinks", "sinks:\n  - {name: a, type: stdout}\n  - {name: b, type: stdout}\n", nil,
			[]string{"sinks[1].type: sinks[0] writes to standard output already"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := loadYAML(t, c.yaml, c.env...)
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\nwant it to contain %q", err, w)
				}
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if strings.HasPrefix(line, "sinks: sinks") || strings.Contains(line, "sinks.0") {
					t.Errorf("line %q names the path in another form", line)
				}
			}
		})
	}
}

func TestCheckFilesNamesTheSinkOfAMissingSecretFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	cfg, err := loadYAML(t, `
sinks:
  - {name: a, type: stdout}
  - name: lake
    type: clickhouse
    clickhouse: {password_file: `+missing+`}
`)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.CheckFiles(); err == nil || !strings.Contains(err.Error(), "sinks[1].clickhouse.password_file: file "+missing+" does not exist") {
		t.Fatalf("CheckFiles: %v", err)
	}
}

func TestDumpShowsEverySinkWithoutItsSecrets(t *testing.T) {
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadYAML(t, `
sinks:
  - {name: a, type: stdout}
  - name: lake
    type: clickhouse
    clickhouse: {password: hunter2}
`)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cfg.Dump()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "hunter2") || !strings.Contains(string(b), "name: lake") {
		t.Fatalf("dump:\n%s", b)
	}
}

// An error of a running sink names its key under "sink." (the sink package
// knows no other); for an entry of the list it must name that entry, and
// still wrap what it wrapped.
func TestRekeyedNamesTheEntryOfTheList(t *testing.T) {
	cause := fmt.Errorf("sink.clickhouse.cluster: the server does not know cluster %q: %w", "x", context.DeadlineExceeded)
	entry := SinkConfig{key: "sinks[1]"}
	got := entry.Rekeyed(cause)
	if want := `sinks[1].clickhouse.cluster: the server does not know cluster "x": context deadline exceeded`; got.Error() != want {
		t.Errorf("Rekeyed = %q, want %q", got, want)
	}
	if !errors.Is(got, context.DeadlineExceeded) {
		t.Error("Rekeyed lost the wrapped error")
	}
	for _, c := range []struct {
		name string
		sc   SinkConfig
		err  error
	}{
		{"the one-sink section", SinkConfig{}, cause},
		{"an error without a key", entry, errors.New("open clickhouse [h:9000]: dial tcp: refused")},
		{"a key outside sink", entry, errors.New("api.base_url: bad")},
		{"no error", entry, nil},
	} {
		if got := c.sc.Rekeyed(c.err); got != c.err {
			t.Errorf("%s: Rekeyed(%v) = %v, want it unchanged", c.name, c.err, got)
		}
	}
}

// sink.kafka.keys is merged over its defaults (agent_info and edge_alerts
// keyed by entity), in a list entry as in the one-sink section and from
// the environment, and KeyOf falls back to sink.kafka.key.
func TestKafkaKeysPerSourceMergeOverTheDefaults(t *testing.T) {
	cfg, err := loadYAML(t, "sinks:\n  - {type: kafka, kafka: {brokers: [a:1], key: id, keys: {dns: entity, edge_alerts: id}}}\n")
	if err != nil {
		t.Fatal(err)
	}
	k := cfg.Sinks()[0].Kafka
	got := fmt.Sprintf("agent_info=%s edge_alerts=%s dns=%s connections=%s", k.KeyOf("agent_info"), k.KeyOf("edge_alerts"), k.KeyOf("dns"), k.KeyOf("connections"))
	if want := "agent_info=entity edge_alerts=id dns=entity connections=id"; got != want {
		t.Errorf("keys %s, want %s", got, want)
	}
	cfg, err = loadYAML(t, "sink: {type: kafka, kafka: {brokers: [a:1]}}\n", "COLLECTOR_SINK__KAFKA__KEYS__USER_LOGINS=entity")
	if err != nil {
		t.Fatal(err)
	}
	if k := cfg.Sinks()[0].Kafka; k.KeyOf("user_logins") != "entity" || k.KeyOf("agent_info") != "entity" || k.KeyOf("dns") != "id" {
		t.Errorf("from the environment: keys %v, key %s", k.Keys, k.Key)
	}
	if d := DefaultSink().Kafka.Keys; len(d) != 2 {
		t.Errorf("a load changed the defaults: %v", d)
	}
}
