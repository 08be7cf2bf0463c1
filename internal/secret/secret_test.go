package secret

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSecretNeverPrintsItsValue(t *testing.T) {
	s := New("hunter2-very-secret")
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("x", "secret", s)
	j, _ := json.Marshal(struct{ S Secret }{s})
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s", s, s, s, s), logs.String(), string(j)} {
		if strings.Contains(out, "hunter2") {
			t.Fatalf("secret leaked: %s", out)
		}
	}
	if s.Reveal() != "hunter2-very-secret" || !s.IsSet() || New("").IsSet() {
		t.Fatal("Reveal/IsSet")
	}
}

func TestResolvePrefersInlineAndReadsFiles(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s")
	if err := os.WriteFile(p, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, _ := Resolve("inline", p); s.Reveal() != "inline" {
		t.Fatal("inline must win")
	}
	if s, _ := Resolve("", p); s.Reveal() != "from-file" {
		t.Fatalf("file: %q", s.Reveal())
	}
	if _, err := Resolve("", p+"-missing"); err == nil {
		t.Fatal("missing file must be an error")
	}
}
