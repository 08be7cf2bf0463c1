package deploytest

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/svcexport/collector"
)

// archiveBuild runs scripts/release-build.sh --archive into dir for this
// machine's platform, with the test stamps.
func archiveBuild(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(root(t), "scripts", "release-build.sh"), "--archive", dir)
	cmd.Env = append(os.Environ(), "VERSION="+testVersion, "COMMIT="+testCommit, "DATE="+testDate,
		"GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release-build.sh --archive: %v\n%s", err, out)
	}
}

// sha256sums parses a SHA256SUMS file (sha256sum's format: hex digest, two
// spaces, file name).
func sha256sums(t *testing.T, p string) map[string]string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line := regexp.MustCompile(`^([0-9a-f]{64})  ([^/\s]+)$`)
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			t.Fatalf("SHA256SUMS: %q is not `<sha256 hex>  <file>`", sc.Text())
		}
		sums[m[2]] = m[1]
	}
	return sums
}

func TestReleaseArchivesAndTheirChecksums(t *testing.T) {
	dir := t.TempDir()
	// A stale archive of another platform: SHA256SUMS covers it too.
	other := "collector_" + testVersion + "_plan9_386.tar.gz"
	if err := os.WriteFile(filepath.Join(dir, other), []byte("not really an archive"), 0o644); err != nil {
		t.Fatal(err)
	}
	archiveBuild(t, dir)

	name := "collector_" + testVersion + "_" + runtime.GOOS + "_" + runtime.GOARCH
	sums := sha256sums(t, filepath.Join(dir, "SHA256SUMS"))
	if got := sortedKeys(sums); !slices.Equal(got, []string{name + ".tar.gz", other}) {
		t.Fatalf("SHA256SUMS lists %v, want %s and %s", got, name+".tar.gz", other)
	}
	for file, want := range sums {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != want {
			t.Errorf("SHA256SUMS: %s has sha256 %x, the file says %s", file, sum, want)
		}
	}

	// The archive: one directory with the binary, the licence, the README
	// and the reference configuration, owned by root, dated DATE.
	archive, err := os.ReadFile(filepath.Join(dir, name+".tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{ // entry -> repository file ("" = the binary or a directory)
		name + "/":                       "",
		name + "/collector":              "",
		name + "/LICENSE":                "LICENSE",
		name + "/README.md":              "README.md",
		name + "/configs/":               "",
		name + "/configs/collector.yaml": "configs/collector.yaml",
	}
	seen := map[string]bool{}
	bin := filepath.Join(t.TempDir(), "collector")
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		src, ok := want[h.Name]
		if !ok {
			t.Errorf("%s.tar.gz holds %s, which is not expected", name, h.Name)
			continue
		}
		seen[h.Name] = true
		if h.Uid != 0 || h.Gid != 0 || h.ModTime.UTC().Format("2006-01-02T15:04:05Z") != testDate {
			t.Errorf("%s: owner %d:%d, time %s; want 0:0 and DATE %s (reproducible)", h.Name, h.Uid, h.Gid, h.ModTime.UTC(), testDate)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case src != "":
			if !bytes.Equal(body, read(t, src)) {
				t.Errorf("%s is not the repository's %s", h.Name, src)
			}
		case h.Name == name+"/collector":
			if h.FileInfo().Mode().Perm() != 0o755 {
				t.Errorf("%s: mode %v, want 0755", h.Name, h.FileInfo().Mode())
			}
			if err := os.WriteFile(bin, body, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	for e := range want {
		if !seen[e] {
			t.Errorf("%s.tar.gz does not hold %s", name, e)
		}
	}
	if seen[name+"/collector"] {
		out, err := exec.Command(bin, "version").CombinedOutput()
		wantVersion := "collector " + testVersion + " (commit " + testCommit + ", built " + testDate + ")"
		if err != nil || strings.TrimSpace(string(out)) != wantVersion {
			t.Errorf("the archive's collector version: %v %q, want %q", err, out, wantVersion)
		}
	}

	if !regexp.MustCompile(`(?m)^\s*(\S+=\S+ )*scripts/release-build\.sh --archive \S+`).MatchString(string(read(t, "docs/release.md"))) {
		t.Errorf("docs/release.md gives no `scripts/release-build.sh --archive DIR` command")
	}
	if !regexp.MustCompile(`(?m)^\s*scripts/release\.sh \S+`).MatchString(string(read(t, "README.md"))) {
		t.Errorf("README.md gives no `scripts/release.sh DIR` command")
	}

	// Reproducible: the same inputs give the same bytes.
	again := t.TempDir()
	archiveBuild(t, again)
	if b, err := os.ReadFile(filepath.Join(again, name+".tar.gz")); err != nil || !bytes.Equal(b, archive) {
		t.Errorf("a second --archive build of the same commit differs (err %v): the archive is not reproducible", err)
	}
}

func TestLicenseIsApache2(t *testing.T) {
	l := string(read(t, "LICENSE"))
	for _, want := range []string{"Apache License", "Version 2.0, January 2004", "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION",
		"END OF TERMS AND CONDITIONS", "Copyright 2026 The collector authors"} {
		if !strings.Contains(l, want) {
			t.Errorf("LICENSE does not contain %q", want)
		}
	}
	if len(l) < 11000 {
		t.Errorf("LICENSE is %d bytes: not the full Apache License 2.0 text", len(l))
	}
}

// untar returns the body of the entry name of a .tar.gz file.
func untar(t *testing.T, archive, name string) []byte {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			t.Fatalf("%s holds no %s", archive, name)
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == name {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}

// The version is written once, in VERSION (version.go embeds it): the
// chart's appVersion (the image tag when image.tag is empty), the kustomize
// image tag and the changelog's newest release name it, under an
// Unreleased section, so that what a user pins is what was released.
func TestReleaseVersionIsWrittenOnceAndNamedEverywhere(t *testing.T) {
	t.Parallel()
	v := strings.TrimSpace(string(read(t, "VERSION")))
	if !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`).MatchString(v) {
		t.Fatalf("VERSION holds %q, want MAJOR.MINOR.PATCH", v)
	}
	if collector.Version() != v {
		t.Errorf("collector.Version() = %q, VERSION holds %q", collector.Version(), v)
	}

	if app := str(yamlDoc(t, chartDir+"/Chart.yaml"), "appVersion"); app != v {
		t.Errorf("%s/Chart.yaml: appVersion %q, VERSION holds %q", chartDir, app, v)
	}
	values := yamlDoc(t, chartDir+"/values.yaml")
	if tag := str(values, "image.tag"); tag != "" && tag != v {
		t.Errorf("%s/values.yaml: image.tag %q: the default image is not the release %s", chartDir, tag, v)
	}
	if repo := str(values, "image.repository"); repo != "ghcr.io/svcexport/collector" {
		t.Errorf("%s/values.yaml: image.repository %q", chartDir, repo)
	}
	images := list(yamlDoc(t, k8sDir+"/kustomization.yaml"), "images")
	if len(images) != 1 || str(images[0], "newTag") != v {
		t.Errorf("%s/kustomization.yaml: images %v, want the collector's with newTag %s", k8sDir, images, v)
	}

	// Keep a Changelog: "## [Unreleased]" first, then "## [X.Y.Z] - DATE",
	// the newest release being VERSION.
	heads := regexp.MustCompile(`(?m)^## \[([^\]]+)\](?: - ([0-9]{4}-[0-9]{2}-[0-9]{2}))?[ \t]*$`).
		FindAllStringSubmatch(string(read(t, "CHANGELOG.md")), -1)
	switch {
	case len(heads) < 2:
		t.Errorf("CHANGELOG.md has sections %v, want [Unreleased] and at least one release", heads)
	case heads[0][1] != "Unreleased" || heads[0][2] != "":
		t.Errorf("CHANGELOG.md: the first section is %q, want \"## [Unreleased]\"", heads[0][0])
	case heads[1][1] != v || heads[1][2] == "":
		t.Errorf("CHANGELOG.md: the newest release is %q, want \"## [%s] - YYYY-MM-DD\" (VERSION)", heads[1][0], v)
	}
}

// scripts/release.sh builds the version in VERSION, stamped, with its
// checksums, and refuses a version other than the file's.
func TestReleaseScriptBuildsTheVersionFile(t *testing.T) {
	v := strings.TrimSpace(string(read(t, "VERSION")))
	script := filepath.Join(root(t), "scripts", "release.sh")

	bad := exec.Command("bash", script, t.TempDir())
	bad.Env = append(os.Environ(), "VERSION=999.0.0", "PLATFORMS="+runtime.GOOS+"/"+runtime.GOARCH)
	if out, err := bad.CombinedOutput(); err == nil || !strings.Contains(string(out), "999.0.0") {
		t.Errorf("release.sh with VERSION=999.0.0: %v, %q; want a refusal naming it", err, out)
	}

	dir := t.TempDir()
	cmd := exec.Command("bash", script, dir)
	cmd.Env = append(os.Environ(), "VERSION=", "COMMIT="+testCommit, "DATE="+testDate,
		"PLATFORMS="+runtime.GOOS+"/"+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release.sh: %v\n%s", err, out)
	}
	name := "collector_" + v + "_" + runtime.GOOS + "_" + runtime.GOARCH
	sums := sha256sums(t, filepath.Join(dir, "SHA256SUMS"))
	man := "collector_" + v + "_man.tar.gz"
	if got := sortedKeys(sums); !slices.Equal(got, []string{name + ".tar.gz", man}) {
		t.Fatalf("SHA256SUMS lists %v, want %s.tar.gz and %s", got, name, man)
	}
	// The man pages come from the command definitions, one per command.
	if page := untar(t, filepath.Join(dir, man), "man/collector-run.1"); !strings.Contains(string(page), "--once") {
		t.Errorf("man/collector-run.1 does not document --once:\n%s", page)
	}
	bin := filepath.Join(t.TempDir(), "collector")
	if err := os.WriteFile(bin, untar(t, filepath.Join(dir, name+".tar.gz"), name+"/collector"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	want := "collector " + v + " (commit " + testCommit + ", built " + testDate + ")"
	if err != nil || strings.TrimSpace(string(out)) != want {
		t.Errorf("the release's collector version: %v %q, want %q", err, out, want)
	}
}
