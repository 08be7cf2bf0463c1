package api

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcexport/collector/internal/secret"
)

// A configuration reload (issue 33) reads the secret file again at once:
// the new value is the client's, known to its scrubber, and logged as new
// without being shown; an unreadable file keeps the value before.
func TestReadSecretAgainTakesTheFilesNewValue(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "api-secret")
	writeSecret(t, path, "first-secret-value")
	scr := secret.NewScrubber()
	var logs lockedBuffer
	c := fileClient(t, "http://127.0.0.1:1", path, scr, &logs)

	writeSecret(t, path, "second-secret-value")
	c.ReadSecretAgain(t.Context())
	if got := c.cred.current().Reveal(); got != "second-secret-value" {
		t.Errorf("after ReadSecretAgain the client holds %q", got)
	}
	if s := scr.Scrub("x second-secret-value y"); strings.Contains(s, "second-secret-value") {
		t.Errorf("the new value is not scrubbed: %q", s)
	}
	if l := logs.String(); !strings.Contains(l, "read a new value from api.secret_file") || strings.Contains(l, "second-secret-value") {
		t.Errorf("logs: %s", l)
	}

	writeSecret(t, path, "")
	c.ReadSecretAgain(t.Context())
	if got := c.cred.current().Reveal(); got != "second-secret-value" {
		t.Errorf("an empty file replaced the value: %q", got)
	}
}
