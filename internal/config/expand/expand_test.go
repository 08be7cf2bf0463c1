package expand

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestTreeExpandsEveryFormAndKeepsLiterals(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cr3t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := map[string]any{
		"api": map[string]any{
			"base_url": "https://${HOST}/x",
			"secret":   "${file:" + secret + "}",
			"account":  "${env:ACCOUNT}",
		},
		"level":    "${LEVEL:-info}",
		"price":    "$5 and $${literal}",
		"accounts": []any{"${ACCOUNT}", "b"},
	}
	errs, left := Tree([]string{"HOST=h:1", "ACCOUNT=acme"}, nil, m)
	if len(errs) != 0 || len(left) != 0 {
		t.Fatalf("errors %v, left %v", errs, left)
	}
	want := map[string]any{
		"api":      map[string]any{"base_url": "https://h:1/x", "secret": "s3cr3t", "account": "acme"},
		"level":    "info",
		"price":    "$5 and ${literal}",
		"accounts": []any{"acme", "b"},
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("expanded to %v, want %v", m, want)
	}
}

func TestTreeErrorsNameTheKeyNeverTheContent(t *testing.T) {
	m := map[string]any{
		"api":  map[string]any{"secret": "${NOPE}", "token": "${bad name}"},
		"list": []any{"ok", "${file:/does/not/exist}"},
		"open": "${UNCLOSED",
	}
	errs, _ := Tree([]string{"OTHER=topsecret"}, nil, m)
	got := map[string]string{}
	for _, e := range errs {
		got[e.Key] = e.Msg
		if strings.Contains(e.Error(), "topsecret") {
			t.Errorf("error %q holds a variable's content", e)
		}
	}
	for key, part := range map[string]string{
		"api.secret": "NOPE is not set", "api.token": "not a variable name",
		"list[1]": "does not exist", "open": "without its closing }",
	} {
		if !strings.Contains(got[key], part) {
			t.Errorf("%s: %q, want it to say %q (all: %v)", key, got[key], part, got)
		}
	}
}

func TestTreeLenientLeavesKeysAndWholeLists(t *testing.T) {
	m := map[string]any{
		"api":      map[string]any{"secret": "${API_SECRET}", "base_url": "http://x"},
		"accounts": []any{"a", "${ACCT}"},
	}
	lenient := func(key string) bool { return key == "api.secret" || strings.HasPrefix(key, "accounts") }
	errs, left := Tree(nil, lenient, m)
	if len(errs) != 0 {
		t.Fatalf("errors %v", errs)
	}
	if left["api.secret"] != "${API_SECRET}" || left["accounts"] != "${ACCT}" || len(left) != 2 {
		t.Fatalf("left %v", left)
	}
	if _, ok := m["accounts"]; ok {
		t.Error("a list with an unresolved element was kept in part")
	}
	if _, ok := m["api"].(map[string]any)["secret"]; ok {
		t.Error("an unresolved key was kept")
	}
}
