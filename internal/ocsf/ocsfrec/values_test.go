package ocsfrec

import (
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/svcexport/collector/internal/record"
)

// typeRegexp returns the regex of an OCSF type from the vendored
// dictionary, the reference for the hand-written checks.
func typeRegexp(t testing.TB, typ string) *regexp.Regexp {
	t.Helper()
	b, err := os.ReadFile("../testdata/ocsf-schema-1.3.0/dictionary.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Types struct {
			Attributes map[string]struct{ Regex string } `json:"attributes"`
		} `json:"types"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	re := d.Types.Attributes[typ].Regex
	if re == "" {
		t.Fatalf("type %s has no regex", typ)
	}
	return regexp.MustCompile(re)
}

var hostnames = []string{"a", "a.b", "ip-10-0-1-2.ec2.internal", "xn--tkyo-0ra.example.jp", "A-1.b-2", "web-東京-1",
	"", ".", "a.", ".a", "-a", "a-", "a..b", "a.-b", "a-.b", "a_b", "a b", "1.2.3.4", "a/b"}

var emails = []string{"a@b.c", "jose.mueller@acme.example", "x+y@d-1.e.f", "a,b@c.d", "@b.c", "a@b", "a@.b", "a@b.",
	"a@b..", "a@-.x", "a@@b.c", "ä@b.c", "a@b.c d", "a.@b.c", "a@b.c-", "!#$%&'*+-/=?^_`{|}~.@x.y"}

var addresses = []string{"1.2.3.4", "255.255.255.255", "0.0.0.0", "::1", "fe80::1%eth0", "2001:db8::8a2e:370:7334",
	"::ffff:1.2.3.4", "256.1.1.1", "1.2.3", "01.2.3.4", "1.2.3.4.5", "", "a::b::c", "1.2.3.4 ", "localhost"}

func TestHostnameMatchesSchema(t *testing.T) {
	re := typeRegexp(t, "hostname_t")
	for _, h := range hostnames {
		if got, want := validHostname([]byte(h)), re.MatchString(h); got != want {
			t.Errorf("validHostname(%q) = %v, the schema says %v", h, got, want)
		}
	}
}

func TestEmailMatchesSchema(t *testing.T) {
	re := typeRegexp(t, "email_t")
	for _, e := range emails {
		if got, want := ValidEmail([]byte(e)), re.MatchString(e); got != want {
			t.Errorf("ValidEmail(%q) = %v, the schema says %v", e, got, want)
		}
	}
}

func TestAddressesTheSchemaAccepts(t *testing.T) {
	re := typeRegexp(t, "ip_t")
	want := map[string]int{"1.2.3.4": 4, "255.255.255.255": 4, "0.0.0.0": 4, "::1": 6, "fe80::1%eth0": 6,
		"2001:db8::8a2e:370:7334": 6, "::ffff:1.2.3.4": 6}
	for _, a := range addresses {
		v := IPVersion([]byte(a))
		if v != want[a] {
			t.Errorf("IPVersion(%q) = %d, want %d", a, v, want[a])
		}
		if v != 0 && !re.MatchString(a) {
			t.Errorf("IPVersion accepts %q, the schema's regex does not", a)
		}
	}
}

// times are record times the API sends or might send (C3, C6).
var times = []string{`"2026-11-20T10:00:00Z"`, `"2026-11-20T10:00:00.123Z"`, `"2026-11-20T10:00:00.123456789Z"`,
	`"2026-11-20T10:00:00+0000"`, `"2026-11-20T10:00:00.5+0130"`, `"2026-11-20T10:00:00-05:00"`, `"2026-11-20T10:00:00"`,
	`"2026-11-20 10:00:00Z"`, `"2026-11-20"`, `"2026-02-31T10:00:00Z"`, `"1970-01-01T00:30:00+01:00"`, `"2026-11-20T24:00:00Z"`,
	`1795168800000`, `1795168800`, `"1795168800"`, `0`, `-1`, `1e3`, `1.5e12`, `"x"`, `""`, `true`, `{"a":1}`,
	`"2026-11-20T10:00:00.1234567891Z"`, `"2026-11-20T10:00:00+25:00"`, `"2026-11-20T10:00:00+01:6x"`, `99999999999999999`}

// TestTimesAsTheCollectorReadsThem: TimeMs reads a time exactly when
// record.ParseTime does, to the same millisecond.
func TestTimesAsTheCollectorReadsThem(t *testing.T) {
	for _, raw := range times {
		checkTime(t, []byte(raw))
	}
}

func checkTime(t *testing.T, raw []byte) {
	t.Helper()
	ms, ok := TimeMs(raw)
	ref, err := record.ParseTime(raw)
	if ok != (err == nil) || (ok && ms != ref.UnixMilli()) {
		t.Errorf("TimeMs(%s) = %d %v, record.ParseTime: %v %v", raw, ms, ok, ref.UnixMilli(), err)
	}
}

func FuzzTime(f *testing.F) {
	for _, raw := range times {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, s string) {
		raw := []byte(strconv.Quote(s))
		checkTime(t, raw)
		if isNumber(s) {
			checkTime(t, []byte(s))
		}
	})
}

func FuzzHostnameEmail(f *testing.F) {
	for _, s := range append(hostnames, emails...) {
		f.Add(s)
	}
	hre, ere := typeRegexp(f, "hostname_t"), typeRegexp(f, "email_t")
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		if got, want := validHostname([]byte(s)), hre.MatchString(s); got != want {
			t.Errorf("validHostname(%q) = %v, the schema says %v", s, got, want)
		}
		if got, want := ValidEmail([]byte(s)), ere.MatchString(s); got != want {
			t.Errorf("ValidEmail(%q) = %v, the schema says %v", s, got, want)
		}
	})
}

// isNumber reports whether s is a JSON number, maybe with space after it:
// valid JSON that starts as a number does (what ocsfjson's number scanner
// and json.Valid accept together).
func isNumber(s string) bool {
	return len(s) > 0 && (s[0] == '-' || s[0] >= '0' && s[0] <= '9') && json.Valid([]byte(s))
}
