package deploytest

import (
	"bufio"
	"bytes"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
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

// credentialKeys are the configuration keys naming a file that holds a
// secret, which systemd credentials fill (any other *_file key, a TLS key
// say, may name a credential too).
var credentialKeys = []string{"api.secret_file", "edge.token_file", "sink.kafka.sasl.password_file", "sink.clickhouse.password_file"}

func TestSystemdUnitRunsTheShippedConfigWithItsCredentials(t *testing.T) {
	const unitFile = "deploy/systemd/collector.service"
	u := parseUnit(t, unitFile)
	svc := u["Service"]
	if svc == nil {
		t.Fatal("collector.service has no [Service] section")
	}
	for key, want := range map[string]string{
		"Type":           "simple",
		"Restart":        "always",
		"KillSignal":     "SIGTERM",
		"StateDirectory": "collector",
	} {
		if got := u.last("Service", key); got != want {
			t.Errorf("collector.service: %s=%s, want %s", key, got, want)
		}
	}
	for _, key := range []string{"EnvironmentFile", "PassEnvironment"} {
		if v, ok := svc[key]; ok {
			t.Errorf("collector.service: %s=%v: the secrets are credentials (LoadCredential=), not environment", key, v)
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

	// The credentials: every LoadCredential= is read through a *_file key
	// of collector.yaml at systemd's path for it, and every *_file key
	// names a credential the unit loads.
	credDir := "/run/credentials/" + filepath.Base(unitFile) + "/"
	const cfgFile = "deploy/systemd/collector.yaml"
	creds := map[string]string{} // ID -> source path
	for _, v := range svc["LoadCredential"] {
		id, src, ok := strings.Cut(v, ":")
		if !ok || !regexp.MustCompile(`^[A-Za-z0-9._-]+$`).MatchString(id) || !filepath.IsAbs(src) {
			t.Errorf("collector.service: LoadCredential=%s: want ID:/absolute/path", v)
			continue
		}
		if _, dup := creds[id]; dup {
			t.Errorf("collector.service: credential %s is loaded twice", id)
		}
		creds[id] = src
	}
	if len(creds) == 0 {
		t.Fatal("collector.service: no LoadCredential=: where do the secrets come from?")
	}
	doc := yamlDoc(t, cfgFile)
	referenced := map[string]string{} // ID -> key
	for k := range yamlKeys(t, cfgFile, read(t, cfgFile)) {
		if !strings.HasSuffix(k, "_file") {
			continue
		}
		p := str(doc, k)
		id, ok := strings.CutPrefix(p, credDir)
		if !ok || id == "" || strings.Contains(id, "/") {
			if slices.Contains(credentialKeys, k) && p != "" {
				t.Errorf("%s: %s is %q, not a credential of the unit (%sID)", cfgFile, k, p, credDir)
			}
			continue
		}
		referenced[id] = k
		if _, ok := creds[id]; !ok {
			t.Errorf("%s: %s reads credential %s, which collector.service does not load (LoadCredential=%s:...)", cfgFile, k, id, id)
		}
	}
	for id := range creds {
		if _, ok := referenced[id]; !ok {
			t.Errorf("collector.service: LoadCredential=%s is not read by any *_file key of %s (%v): drop it, or the unit fails when its file is missing", id, cfgFile, credentialKeys)
		}
	}
	// The install steps at the top of the unit create exactly these files,
	// in one root-only directory.
	dirs := map[string]bool{}
	for _, src := range creds {
		dirs[filepath.Dir(src)] = true
	}
	if len(dirs) != 1 {
		t.Errorf("collector.service: credentials come from %v, want one directory", sortedKeys(dirs))
	}
	head := string(read(t, unitFile))
	for dir := range dirs {
		if !strings.Contains(head, "install -d -m 0700 "+dir) {
			t.Errorf("collector.service: the install steps do not create %s mode 0700", dir)
		}
	}
	for id, src := range creds {
		if !strings.Contains(head, "> "+src) {
			t.Errorf("collector.service: the install steps do not write credential %s to %s", id, src)
		}
	}

	// The configuration loads as is: no secret in the environment.
	cfg := mustLoad(t, cfgFile, read(t, cfgFile), nil)
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

	// The systemd steps of docs/install.md write the same credential files.
	sec := docSection(t, "docs/install.md", "## systemd")
	for id, src := range creds {
		if !strings.Contains(sec, "> "+src) {
			t.Errorf("docs/install.md, systemd: the install steps do not write credential %s to %s", id, src)
		}
	}
	if strings.Contains(sec, "EnvironmentFile") || strings.Contains(sec, "collector.env") {
		t.Errorf("docs/install.md, systemd: still mentions the environment file")
	}
}

// TestSystemdAnalyzeVerifiesTheUnit runs systemd's own unit checker where it
// is installed (Debian: systemd), with ExecStart pointing at the release
// binary; any complaint (an unknown directive, a bad value) fails.
func TestSystemdAnalyzeVerifiesTheUnit(t *testing.T) {
	sa, err := osexec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed: the unit is only parsed")
	}
	dir := t.TempDir()
	unit := strings.ReplaceAll(string(read(t, "deploy/systemd/collector.service")), "/usr/local/bin/collector", releaseBinary(t))
	p := filepath.Join(dir, "collector.service")
	if err := os.WriteFile(p, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := osexec.Command(sa, "verify", "--man=no", p).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify collector.service: %v\n%s", err, out)
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
