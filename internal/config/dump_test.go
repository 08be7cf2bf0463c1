package config

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// dollarValues are string values a printed configuration must load back
// as they are (issue 20, item 5): dollars, references that are text,
// escapes, and what YAML must quote.
var dollarValues = []string{
	"$", "$$", "${", "$${", "$$${", "$}", "${}", "a$", "${X}", "$${X}", "$$${X}",
	"${file:/etc/passwd}", "$${file:/etc/passwd}", "${env:X}", "${X:-fallback}",
	"price-$$5-${LITERAL}", "two\nlines ${X}\n", "\"${X}\"", "'${X}'", `back\slash\${X}`,
	"ünïcødé ${日本} ✓", "tab\there\r\nCRLF", "${${X}}", "}${", "- ${X}", "#${X}", "[${X}]",
	"{a: ${X}}", "true", "null", "~", "007", "2026-11-20T00:00:00Z", " padded ", "key: ${X}",
	"\tleading tab\nsecond line", "\t\n", "nul\x00 esc\x1b[31m del\x7f", "nel\u0085 ls\u2028 ps\u2029 bom\ufeff",
}

// roundTrip loads yaml with env, prints it (Dump), loads the print with
// the same environment and fails t unless both loads are equal and the
// print of the print is the same text.
func roundTrip(t *testing.T, yaml string, env []string) (Config, string) {
	t.Helper()
	first, err := Load(writeFile(t, yaml), env)
	if err != nil {
		t.Fatalf("load: %v\n%s", err, yaml)
	}
	dump, err := first.Dump()
	if err != nil {
		t.Fatal(err)
	}
	second, err := Load(writeFile(t, string(dump)), env)
	if err != nil {
		t.Fatalf("load of the print: %v\n%s", err, dump)
	}
	if !reflect.DeepEqual(first, second) {
		t.Fatalf("the print loads back differently: %s\n%s", diffFields(first, second), dump)
	}
	again, err := second.Dump()
	if err != nil || string(again) != string(dump) {
		t.Fatalf("the print of the print differs (%v):\n%s\n---\n%s", err, dump, again)
	}
	return first, string(dump)
}

// Every string value, whatever it holds, loads back from check --print as
// itself: a value holding ${file:/etc/passwd} must not read the file, nor
// $${X} lose a dollar (issue 20, item 5; docs/commands.md promises the print
// loads back as the same configuration). The values come in through
// ${V} references, whose content is not expanded again, so that the first
// load holds them exactly; the environment also sets X and LITERAL, so
// that a reference printed as such would change its value.
func TestDump_EveryStringValueLoadsBackAsItself(t *testing.T) {
	t.Parallel()
	yaml := validBase + `  user: ${V_USER}
  secret_header: X-$${V}
checkpoint:
  path: ${V_PATH}
sources:
  dns:
    filters:
      - {expression: eq, field: "${V_FIELD}", value: "${V_VALUE}"}
      - {expression: in, field: f, values: ["${V_A}", "${V_B}"]}
simulator:
  settings:
    note: ${V_NOTE}
sink:
  type: file
`
	for i, v := range dollarValues {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			env := []string{"COLLECTOR_API__SECRET=s3cr3t-${X}", "X=expanded", "LITERAL=expanded", "V_USER=" + v, "V_PATH=" + v, "V_FIELD=" + v,
				"V_VALUE=" + v, "V_A=" + v, "V_B=" + v + v,
				// A free-form string that looks like a list ([a]) loads as
				// one, a []string then a []any: not a matter of dollars.
				"V_NOTE=note " + v}
			cfg, dump := roundTrip(t, yaml, env)
			if cfg.API.User != v || cfg.Checkpoint.Path != v || cfg.Sources["dns"].Filters[1].Values[1] != v+v {
				t.Fatalf("the first load does not hold %q: %+v", v, cfg.API)
			}
			if cfg.API.SecretHeader != "X-${V}" {
				t.Fatalf("secret_header %q", cfg.API.SecretHeader)
			}
			// The secret stays masked: the print shows the placeholder,
			// and a run needs the secret supplied again.
			if strings.Contains(dump, "s3cr3t") || !strings.Contains(dump, "secret: '[redacted]'") {
				t.Fatalf("the print shows the secret or no placeholder:\n%s", dump)
			}
		})
	}
}

// A fuzz-ish table: random strings from the characters that matter, in a
// string key and a free-form one.
func TestDump_RandomStringsLoadBackAsThemselves(t *testing.T) {
	t.Parallel()
	yaml := validBase + "  user: ${V1}\nsimulator:\n  settings:\n    a: ${V2}\n    b: ${V3}\nsink:\n  type: file\n"
	r := rand.New(rand.NewPCG(20, 5))
	alphabet := []string{"$", "$", "{", "}", "a", "file:/etc/passwd", ":-", "\\", "\"", "'", "\n", "é", " ", "#", ": ", "\t"}
	random := func() string {
		var b strings.Builder
		for range 1 + r.IntN(10) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	for i := range 64 {
		v1, v2, v3 := random(), random(), random()
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			cfg, _ := roundTrip(t, yaml, []string{"COLLECTOR_API__SECRET=s", "X=expanded", "V1=" + v1, "V2=" + v2, "V3=" + v3})
			if s := cfg.Simulator.Settings; cfg.API.User != v1 || s["a"] != v2 || s["b"] != v3 {
				t.Fatalf("the first load does not hold %q %q %q: %q %q", v1, v2, v3, cfg.API.User, s)
			}
		})
	}
}

// diffFields names the sections of a and b that differ, with both values.
func diffFields(a, b Config) string {
	var out []string
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := range va.NumField() {
		if fa, fb := va.Field(i).Interface(), vb.Field(i).Interface(); !reflect.DeepEqual(fa, fb) {
			out = append(out, fmt.Sprintf("%s: %#v\nthen %#v", va.Type().Field(i).Name, fa, fb))
		}
	}
	return strings.Join(out, "\n")
}
