package suggest

import "testing"

func TestDistance(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"dns", "dns", 0}, {"dsn", "dns", 2}, {"ofline", "offline", 1},
		{"chek", "check", 1}, {"", "abc", 3}, {"abc", "", 3}, {"kitten", "sitting", 3},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := Distance(c.b, c.a); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (not symmetric)", c.b, c.a, got, c.want)
		}
	}
}

func TestClosest(t *testing.T) {
	t.Parallel()
	names := []string{"dns", "connections", "user_logins", "edge_alerts"}
	for _, c := range []struct{ name, want string }{
		{"dsn", "dns"}, {"DNS", "dns"}, {"conections", "connections"}, {"user-logins", "user_logins"},
		{"edge", ""}, {"audit_logs", ""}, {"", "dns"[:0]},
	} {
		if got := Closest(c.name, names); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}
