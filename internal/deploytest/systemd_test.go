package deploytest

import (
	"bufio"
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/config"
)

// unit is a parsed systemd unit: section -> directive -> values in order.
type unit map[string]map[string][]string

func parseUnit(t *testing.T, rel string) unit {
	t.Helper()
	u := unit{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(read(t, rel)))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" || strings.HasSuffix(line, "\\") {
				t.Fatalf("%s:%d: cannot parse %q", rel, n, line)
			}
			u[section][strings.TrimSpace(k)] = append(u[section][strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	return u
}

func (u unit) last(section, key string) string {
	v := u[section][key]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// envFile reads KEY=VALUE lines.
func envFile(t *testing.T, rel string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, line := range strings.Split(string(read(t, rel)), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: %q is not KEY=VALUE", rel, line)
		}
		env[k] = strings.Trim(v, `"'`)
	}
	return env
}

func TestSystemdUnitRunsTheShippedConfigWithItsEnvironmentFile(t *testing.T) {
	u := parseUnit(t, "deploy/systemd/collector.service")
	svc := u["Service"]
	if svc == nil {
		t.Fatal("collector.service has no [Service] section")
	}
	for key, want := range map[string]string{
		"Type":            "simple",
		"Restart":         "on-failure",
		"KillSignal":      "SIGTERM",
		"EnvironmentFile": "-/etc/collector/collector.env",
		"StateDirectory":  "collector",
	} {
		if got := u.last("Service", key); got != want {
			t.Errorf("collector.service: %s=%s, want %s", key, got, want)
		}
	}
	exec := strings.Fields(u.last("Service", "ExecStart"))
	if len(exec) < 2 || exec[0] != "/usr/local/bin/collector" {
		t.Fatalf("collector.service: ExecStart %q does not start /usr/local/bin/collector", exec)
	}
	cfgPath := checkRunArgs(t, "collector.service ExecStart", exec[1:])
	if cfgPath != "/etc/collector/collector.yaml" {
		t.Errorf("collector.service: --config %s, want /etc/collector/collector.yaml (where the install steps put deploy/systemd/collector.yaml)", cfgPath)
	}
	if filepath.Dir(cfgPath) != filepath.Dir(strings.TrimPrefix(u.last("Service", "EnvironmentFile"), "-")) {
		t.Errorf("collector.service: the config and the environment file are not in one directory")
	}

	env := envFile(t, "deploy/systemd/collector.env.example")
	cfg := mustLoad(t, "deploy/systemd/collector.yaml", read(t, "deploy/systemd/collector.yaml"), env)
	state := "/var/lib/" + u.last("Service", "StateDirectory")
	if !underDir(cfg.Checkpoint.Path, state) {
		t.Errorf("collector.yaml: checkpoint.path %s is not under StateDirectory %s, the only place ProtectSystem=strict lets it write", cfg.Checkpoint.Path, state)
	}
	if cfg.Sink.Type == config.SinkFile && !underDir(cfg.Sink.File.Dir, state) {
		t.Errorf("collector.yaml: sink.file.dir %s is not under %s", cfg.Sink.File.Dir, state)
	}
	stop, err := time.ParseDuration(u.last("Service", "TimeoutStopSec"))
	if err != nil {
		t.Fatalf("collector.service: TimeoutStopSec: %v", err)
	}
	if need := 2*cfg.Pipeline.StopTimeout + 5*time.Second; stop <= need {
		t.Errorf("collector.service: TimeoutStopSec %s must exceed 2 x pipeline.stop_timeout (%s) + 5s = %s", stop, cfg.Pipeline.StopTimeout, need)
	}
}

func TestSystemdUnitIsHardened(t *testing.T) {
	u := parseUnit(t, "deploy/systemd/collector.service")
	for key, want := range map[string]string{
		"ProtectSystem":            "strict",
		"ProtectHome":              "yes",
		"NoNewPrivileges":          "yes",
		"PrivateTmp":               "yes",
		"PrivateDevices":           "yes",
		"ProtectKernelTunables":    "yes",
		"ProtectKernelModules":     "yes",
		"ProtectKernelLogs":        "yes",
		"ProtectControlGroups":     "yes",
		"RestrictAddressFamilies":  "AF_INET AF_INET6 AF_UNIX",
		"CapabilityBoundingSet":    "",
		"LockPersonality":          "yes",
		"MemoryDenyWriteExecute":   "yes",
		"RestrictSUIDSGID":         "yes",
		"RestrictNamespaces":       "yes",
		"RestrictRealtime":         "yes",
		"SystemCallArchitectures":  "native",
		"RestartPreventExitStatus": "2",
	} {
		vals, ok := u["Service"][key]
		if !ok || vals[len(vals)-1] != want {
			t.Errorf("collector.service: want %s=%s, have %v", key, want, vals)
		}
	}
	if !containsValue(u["Service"]["SystemCallFilter"], "@system-service") {
		t.Errorf("collector.service: no SystemCallFilter=@system-service")
	}
	if u.last("Service", "DynamicUser") != "yes" && u.last("Service", "User") == "" {
		t.Errorf("collector.service: neither DynamicUser=yes nor User=")
	}
	if u.last("Service", "User") == "root" {
		t.Errorf("collector.service: runs as root")
	}
}

func containsValue(vals []string, v string) bool {
	for _, s := range vals {
		for _, f := range strings.Fields(s) {
			if f == v {
				return true
			}
		}
	}
	return false
}
