package record

import "testing"

func TestStreamStringIsSourceSlashAccount(t *testing.T) {
	for _, tt := range []struct {
		s    Stream
		want string
	}{
		{Stream{Source: "dns", Account: "acme"}, "dns/acme"},
		{Stream{Source: "audit_logs", Account: OrgAccount}, "audit_logs/org"},
		{Stream{Source: "dns"}, "dns/"},
	} {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.s, got, tt.want)
		}
	}
}
