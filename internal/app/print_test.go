package app

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/svcexport/collector/internal/config"
)

// What check --print writes, its comments included, loads back as the
// same configuration for values holding dollars, references that are
// text, newlines, quotes, backslashes and unicode (issue 20, item 5): a
// ${file:/etc/passwd} in a value prints so that it is not read, and a
// newline in a filter cannot end a comment line.
func TestPrintConfig_LoadsBackValuesWithDollarsAsThemselves(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := write("c.yaml", `api:
  base_url: http://127.0.0.1:1
  key_id: ${KEY_ID}
  user: "$${file:/etc/passwd} $$${X} $5"
accounts: [acme]
sources:
  dns:
    filters:
      - {expression: eq, field: fqdn, value: "${FILTER}"}
sink:
  type: file
`)
	env := []string{"COLLECTOR_API__SECRET=s3cr3t", "X=expanded",
		"KEY_ID=${file:/etc/passwd}", "FILTER=a\n#   dns: off\n\"q\" \\ ü ${X} $${X}"}
	cfg, err := config.Load(first, env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.API.KeyID != "${file:/etc/passwd}" || cfg.API.User != "${file:/etc/passwd} $${X} $5" {
		t.Fatalf("loaded key_id %q user %q", cfg.API.KeyID, cfg.API.User)
	}
	var out bytes.Buffer
	if err := PrintConfig(&out, cfg); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "s3cr3t") {
		t.Fatalf("the print shows the secret:\n%s", out.String())
	}
	again, err := config.Load(write("printed.yaml", out.String()), env)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !reflect.DeepEqual(cfg, again) {
		t.Fatalf("the print loads back as key_id %q user %q filters %q:\n%s", again.API.KeyID, again.API.User,
			again.Sources["dns"].Filters, out.String())
	}
	var second bytes.Buffer
	if err := PrintConfig(&second, again); err != nil || second.String() != out.String() {
		t.Fatalf("the print of the print differs (%v):\n%s\n---\n%s", err, out.String(), second.String())
	}
	// One comment line per source, whatever its filters hold.
	if n := strings.Count(out.String(), "\n#   dns: "); n != 1 {
		t.Fatalf("%d comment lines for dns:\n%s", n, out.String())
	}
}
