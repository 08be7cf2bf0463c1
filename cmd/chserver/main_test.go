package main

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

func TestFlagsAreChecked(t *testing.T) {
	t.Setenv("CHDB_LIB", "")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no library", []string{"--path", "d"}, "--lib (or $CHDB_LIB) is required: run scripts/clickhouse.sh install"},
		{"no path", []string{"--lib", "x.so"}, "--path is required"},
		{"same ports", []string{"--lib", "x.so", "--path", "d", "--tcp-port", "5", "--http-port", "5"}, "must differ"},
		{"port out of range", []string{"--lib", "x.so", "--path", "d", "--tcp-port", "70000"}, "between 1 and 65535"},
		{"short lifetime", []string{"--lib", "x.so", "--path", "d", "--lifetime", "1ms"}, "--lifetime"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseFlags(c.args)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("parseFlags(%v) = %v, want %q", c.args, err, c.want)
			}
		})
	}
	t.Setenv("CHDB_LIB", "/lib/from/env.so")
	o, err := parseFlags([]string{"--path", "d"})
	if err != nil || o.lib != "/lib/from/env.so" || o.tcpPort != 19000 || o.httpPort != 18123 {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
}

// A busy port is refused before the library is even loaded: a server that
// could not bind would answer nobody, or a test would talk to another one.
func TestBusyPortIsRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	busy := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	err = run([]string{"--lib", "/nonexistent/libchdb.so", "--path", t.TempDir(), "--tcp-port", busy, "--http-port", "1"})
	if err == nil || !strings.Contains(err.Error(), "port "+busy) {
		t.Fatalf("run with a busy port = %v", err)
	}
}

func TestCStringsAreNULTerminatedWithANullPointerAtTheEnd(t *testing.T) {
	args := []string{"clickhouse", "--query=SELECT 1", ""}
	argv, free := cStrings(args)
	defer free()
	ptrs := (*[4]unsafe.Pointer)(argv)
	for i, a := range args {
		b := unsafe.Slice((*byte)(ptrs[i]), len(a)+1)
		if got := string(b[:len(a)]); got != a || b[len(a)] != 0 {
			t.Errorf("argv[%d] = %q (terminator %d), want %q", i, got, b[len(a)], a)
		}
	}
	if ptrs[3] != nil {
		t.Error("argv is not NULL-terminated")
	}
}

func TestFatalAnswer(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
		want   bool
	}{
		{200, "1\n", false},
		{500, "Code: 236. DB::Exception: Cannot execute query: the server is shutting down due to a fatal error. (ABORTED)", true},
		{500, "Code: 241. DB::Exception: Memory limit (total) exceeded", false},
		{503, "", false},
	} {
		if got := fatalAnswer(c.status, []byte(c.body)); got != c.want {
			t.Errorf("fatalAnswer(%d, %q) = %v, want %v", c.status, c.body, got, c.want)
		}
	}
}
