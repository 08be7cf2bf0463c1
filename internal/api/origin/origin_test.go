package origin

import (
	"errors"
	"net/url"
	"testing"
)

// C1, C3: an origin is scheme, host and port; the host's case and the
// default port do not make another origin, anything else does.
func TestOrigin_C1_C3_NormalizedComparison(t *testing.T) {
	base, _ := url.Parse("https://api.example.test")
	set, err := New(base, "api.allowed_origins", []string{"https://Pages.Example.test:8443/", "http://10.0.0.7"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		url  string
		want bool
	}{
		{"https://api.example.test/api/v2/x?p=1", true},
		{"https://API.EXAMPLE.TEST:443/x", true},
		{"HTTPS://api.example.test:0443/x", true},
		{"https://pages.example.test:8443/n", true},
		{"http://10.0.0.7:80/n", true},
		{"http://api.example.test/x", false},       // another scheme
		{"https://api.example.test:8443/x", false}, // another port
		{"https://api.example.test.evil.test/x", false},
		{"https://pages.example.test/n", false}, // allowed only on 8443
		{"https://10.0.0.7/n", false},
		{"ftp://api.example.test/x", false},
		{"file:///etc/passwd", false},
		{"https://u:p@evil.test/x", false},
	} {
		u, err := url.Parse(tt.url)
		if err != nil {
			t.Fatal(err)
		}
		err = set.Check(u, false)
		var oe *Error
		if got := err == nil; got != tt.want || (err != nil && !errors.As(err, &oe)) {
			t.Errorf("%s: allowed %v (%v), want %v", tt.url, got, err, tt.want)
		}
	}
}

func TestScrubURLs(t *testing.T) {
	for in, want := range map[string]string{
		`get "http://u:p@h:1/x": EOF`:         `get "http://[redacted]@h:1/x": EOF`,
		`https://user@host/a and ftp://a:b@c`: `https://[redacted]@host/a and ftp://[redacted]@c`,
		`http://u:p/w@host/x`:                 `http://[redacted]@host/x`,
		`http://host/x?mail=a`:                `http://host/x?mail=a`,
		`no url @ all`:                        `no url @ all`,
	} {
		if got := ScrubURLs(in); got != want {
			t.Errorf("ScrubURLs(%q) = %q, want %q", in, got, want)
		}
	}
}
