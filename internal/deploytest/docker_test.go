package deploytest

import (
	"debug/elf"
	"encoding/json"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction; heredoc holds the body of a
// "<<NAME" here-document.
type instruction struct {
	cmd, args, heredoc string
}

type stage struct {
	from, name string
	ins        []instruction
}

func parseDockerfile(t *testing.T) []stage {
	t.Helper()
	lines := strings.Split(string(read(t, "Dockerfile")), "\n")
	var stages []stage
	globals := map[string]string{} // global ARGs and their defaults, for FROM
	argRe := regexp.MustCompile(`\$\{(\w+)\}`)
	heredocRe := regexp.MustCompile(`<<-?["']?(\w+)["']?`)
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, "\\") + " " + strings.TrimSpace(lines[i])
		}
		cmd, args, _ := strings.Cut(line, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if m := heredocRe.FindStringSubmatch(in.args); m != nil && (in.cmd == "COPY" || in.cmd == "RUN") {
			var body []string
			for i++; i < len(lines) && lines[i] != m[1]; i++ {
				body = append(body, lines[i])
			}
			in.heredoc = strings.Join(body, "\n") + "\n"
		}
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			st := stage{}
			for j := 0; j < len(f); j++ {
				switch {
				case strings.HasPrefix(f[j], "--"):
				case strings.EqualFold(f[j], "AS") && j+1 < len(f):
					st.name = f[j+1]
					j++
				case st.from == "":
					st.from = argRe.ReplaceAllStringFunc(f[j], func(m string) string {
						if v, ok := globals[m[2:len(m)-1]]; ok {
							return v
						}
						return m
					})
				}
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			if in.cmd != "ARG" {
				t.Fatalf("Dockerfile: %s before the first FROM", in.cmd)
			}
			if name, def, ok := strings.Cut(in.args, "="); ok {
				globals[name] = argRe.ReplaceAllStringFunc(def, func(m string) string { return globals[m[2:len(m)-1]] })
			}
			continue
		}
		stages[len(stages)-1].ins = append(stages[len(stages)-1].ins, in)
	}
	return stages
}

func (s stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.ins {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

func jsonArgs(t *testing.T, in instruction) []string {
	t.Helper()
	var a []string
	if err := json.Unmarshal([]byte(in.args), &a); err != nil {
		t.Errorf("Dockerfile: %s %s is not in exec (JSON) form: %v", in.cmd, in.args, err)
	}
	return a
}

func findStage(stages []stage, name string) *stage {
	for i := range stages {
		if stages[i].name == name {
			return &stages[i]
		}
	}
	return nil
}

func TestDockerfileBuildsWithTheReleaseScriptTheReadmeGives(t *testing.T) {
	stages := parseDockerfile(t)
	const script = "scripts/release-build.sh"
	var run *instruction
	for _, st := range stages {
		for _, in := range st.all("RUN") {
			if strings.Contains(in.args, script) {
				in := in
				run = &in
			}
		}
	}
	if run == nil {
		t.Fatalf("Dockerfile: no RUN invokes %s: the image must be built by the release command", script)
	}
	for _, want := range []string{"VERSION=$VERSION", "COMMIT=$COMMIT", "DATE=$DATE", "collector", "apisim"} {
		if !strings.Contains(run.args, want) {
			t.Errorf("Dockerfile: the release build %q does not pass %s", run.args, want)
		}
	}
	body := string(read(t, script))
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-X main.version=", "-X main.commit=", "-X main.date="} {
		if !strings.Contains(body, want) {
			t.Errorf("%s does not build with %s", script, want)
		}
	}
	readme := string(read(t, "README.md"))
	if !regexp.MustCompile(`(?m)^\s*(\$ )?(\S+=\S+ )*(\./)?` + regexp.QuoteMeta(script) + `\b`).MatchString(readme) {
		t.Errorf("README.md gives no release build command running %s (paste the \"Install and deploy\" section): "+
			"the local release build must be the command the Dockerfile runs", script)
	}
}

func TestReleaseBuildIsStaticAndStamped(t *testing.T) {
	bin := releaseBinary(t)
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("collector version: %v\n%s", err, out)
	}
	want := "collector " + testVersion + " (commit " + testCommit + ", built " + testDate + ")"
	if strings.TrimSpace(string(out)) != want {
		t.Errorf("collector version = %q, want %q", strings.TrimSpace(string(out)), want)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s is dynamically linked (PT_INTERP): the distroless static image cannot run it", bin)
		}
	}
}

func TestDockerImageRunsTheCollectorAsNonRootWithItsDataVolume(t *testing.T) {
	stages := parseDockerfile(t)
	final := stages[len(stages)-1]
	if final.name != "collector" {
		t.Errorf("Dockerfile: the last (default) stage is %q, want collector", final.name)
	}
	if !strings.Contains(final.from, "distroless/static") || !strings.Contains(final.from, "nonroot") {
		if final.from != "scratch" {
			t.Errorf("Dockerfile: the collector's base %q is not distroless static nonroot (or scratch)", final.from)
		}
	}
	if users := final.all("USER"); len(users) == 0 || strings.HasPrefix(users[len(users)-1].args, "root") || strings.HasPrefix(users[len(users)-1].args, "0") {
		t.Errorf("Dockerfile: the collector stage has no non-root USER")
	}
	// A health check that needs no curl: collector healthcheck (GET
	// /readyz).
	hcs := final.all("HEALTHCHECK")
	if len(hcs) != 1 || !strings.Contains(hcs[0].args, `CMD ["/collector", "healthcheck"`) {
		t.Errorf("Dockerfile: the collector stage's HEALTHCHECK %v, want one running [\"/collector\", \"healthcheck\"]", hcs)
	}
	labels := ""
	for _, in := range final.all("LABEL") {
		labels += in.args + " "
	}
	for _, k := range []string{"source", "version", "revision", "created", "title", "licenses"} {
		if !strings.Contains(labels, "org.opencontainers.image."+k+"=") {
			t.Errorf("Dockerfile: no OCI label org.opencontainers.image.%s", k)
		}
	}
	// The entry point is the binary alone, so that "docker run IMAGE
	// check ..." works; the default command is run with the built-in
	// configuration.
	eps, cmds := final.all("ENTRYPOINT"), final.all("CMD")
	if len(eps) != 1 || len(cmds) != 1 {
		t.Fatalf("Dockerfile: the collector stage has %d ENTRYPOINTs and %d CMDs, want 1 each", len(eps), len(cmds))
	}
	if e := jsonArgs(t, eps[0]); !slices.Equal(e, []string{"/collector"}) {
		t.Errorf("Dockerfile: ENTRYPOINT %q, want [\"/collector\"]", e)
	}
	ep := append(jsonArgs(t, eps[0]), jsonArgs(t, cmds[0])...)
	if !slices.Equal(ep, wantEntrypoint) {
		t.Errorf("Dockerfile: ENTRYPOINT + CMD %q, want %q", ep, wantEntrypoint)
	}
	cfgPath := checkRunArgs(t, "Dockerfile ENTRYPOINT", ep[1:])

	// The built-in configuration at cfgPath loads with the three variables
	// the image's users set, keeps its checkpoint on the volume and serves
	// metrics on the exposed port.
	var text string
	for _, in := range final.all("COPY") {
		if f := strings.Fields(in.args); in.heredoc != "" && f[len(f)-1] == cfgPath {
			text = in.heredoc
		}
	}
	if text == "" {
		t.Fatalf("Dockerfile: no built-in configuration at %s", cfgPath)
	}
	cfg := mustLoad(t, "Dockerfile "+cfgPath, []byte(text), merge(apiSecret, map[string]string{
		"COLLECTOR_API__BASE_URL": "https://api.example.com", "COLLECTOR_API__KEY_ID": "key"}))
	var volumes []string
	for _, v := range final.all("VOLUME") {
		volumes = append(volumes, jsonArgs(t, v)...)
	}
	if !slices.Contains(volumes, "/data") {
		t.Errorf("Dockerfile: VOLUME %v does not hold /data", volumes)
	}
	if !underDir(cfg.Checkpoint.Path, "/data") {
		t.Errorf("Dockerfile: the built-in checkpoint.path %s is not on the /data volume", cfg.Checkpoint.Path)
	}
	if cfg.Sink.Type == "file" && !underDir(cfg.Sink.File.Dir, "/data") {
		t.Errorf("Dockerfile: the built-in sink.file.dir %s is not on the /data volume", cfg.Sink.File.Dir)
	}
	host, port, _ := net.SplitHostPort(cfg.Metrics.Listen)
	var exposed []string
	for _, e := range final.all("EXPOSE") {
		exposed = append(exposed, strings.Fields(e.args)...)
	}
	if !slices.Contains(exposed, "9464") || port != "9464" || (host != "0.0.0.0" && host != "") {
		t.Errorf("Dockerfile: EXPOSE %v and the built-in metrics.listen %s must both be port 9464 on all interfaces", exposed, cfg.Metrics.Listen)
	}
	// /data must belong to the user so that a fresh volume is writable.
	owned := false
	for _, in := range final.all("COPY") {
		f := strings.Fields(in.args)
		owned = owned || (strings.Contains(in.args, "--chown=65532") && f[len(f)-1] == "/data")
	}
	if !owned {
		t.Errorf("Dockerfile: /data is not created owned by 65532 (nonroot): a new volume would not be writable")
	}

	sim := findStage(stages, "apisim")
	if sim == nil {
		t.Fatal("Dockerfile: no apisim stage (Compose builds the simulator from it)")
	}
	if eps := sim.all("ENTRYPOINT"); len(eps) != 1 || jsonArgs(t, eps[0])[0] != "/apisim" {
		t.Errorf("Dockerfile: the apisim stage does not run /apisim")
	}
}

func TestDockerignoreKeepsTheBuildInputsAndDropsTheRest(t *testing.T) {
	var patterns []string
	for _, l := range strings.Split(string(read(t, ".dockerignore")), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, l)
		}
	}
	// The last matching pattern decides; a pattern matching a parent
	// directory matches what is inside (Docker's rule, without the rarer
	// syntax).
	excluded := func(p string) bool {
		ex := false
		for _, pat := range patterns {
			neg := strings.HasPrefix(pat, "!")
			pat = strings.TrimSuffix(strings.TrimPrefix(pat, "!"), "/")
			if dockerMatch(pat, p) {
				ex = !neg
			}
		}
		return ex
	}
	for _, p := range []string{"go.mod", "go.sum", "VERSION", "version.go", "cmd/collector/main.go", "cmd/apisim/main.go", "internal/config/config.go",
		"internal/source/catalog/config.go", "scripts/release-build.sh"} {
		if excluded(p) {
			t.Errorf(".dockerignore excludes %s, which the build needs", p)
		}
	}
	for _, p := range []string{".git/HEAD", ".cache/chdb/x", "out/dns/acme/x.ndjson", "data/checkpoint.db", "bin/collector", "deploy/compose/compose.yaml"} {
		if !excluded(p) {
			t.Errorf(".dockerignore lets %s into the build context", p)
		}
	}
}

func dockerMatch(pat, p string) bool {
	pat = strings.ReplaceAll(pat, "**/", "")
	parts := strings.Split(p, "/")
	for i := 1; i <= len(parts); i++ {
		prefix := strings.Join(parts[:i], "/")
		if ok, _ := filepath.Match(pat, prefix); ok {
			return true
		}
		if ok, _ := filepath.Match(pat, parts[i-1]); ok && strings.Contains(pat, "*") && !strings.Contains(pat, "/") && pat != "*" {
			return true
		}
	}
	return false
}
