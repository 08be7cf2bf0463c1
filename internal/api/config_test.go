package api

import (
	"strings"
	"testing"

	"github.com/svcexport/collector/internal/secret"
)

// A base URL is scheme://host[:port][/path]: a query or a fragment is
// refused, naming the key and never repeating the URL, whose query may be
// a signature (issue 20, item 7). Userinfo stays accepted (and masked
// wherever it is printed).
func TestValidate_ABaseURLWithAQueryOrAFragmentIsRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		url  string
		want string // "" for valid
	}{
		{"https://api.example.test", ""},
		{"https://api.example.test:8443/prefix/", ""},
		{"https://user:pw@api.example.test", ""},
		{"https://api.example.test/?sig=s3cr3t", "must not have a query"},
		{"https://api.example.test?sig=s3cr3t", "must not have a query"},
		{"https://api.example.test/path?", "must not have a query"},
		{"https://api.example.test/#s3cr3t", "or a fragment"},
		{"https://api.example.test#", "or a fragment"},
		{"https://user:pw@api.example.test/p?s3cr3t#x", "must not have a query"},
	} {
		t.Run(c.url, func(t *testing.T) {
			t.Parallel()
			core := DefaultConfig()
			core.BaseURL, core.KeyID, core.Secret = c.url, "k", secret.New("s")
			edge := DefaultEdgeConfig()
			edge.BaseURL, edge.Token = c.url, secret.New("t")
			for key, err := range map[string]error{"api.base_url": core.Validate(), "edge.base_url": edge.Validate()} {
				switch {
				case c.want == "" && err != nil:
					t.Errorf("%s: %v", key, err)
				case c.want == "":
				case err == nil || !strings.HasPrefix(err.Error(), key+": ") || !strings.Contains(err.Error(), c.want):
					t.Errorf("%s: %v, want %q", key, err, key+": ..."+c.want)
				case strings.Contains(err.Error(), "s3cr3t"):
					t.Errorf("%s: the error repeats the URL: %v", key, err)
				}
			}
		})
	}
}
