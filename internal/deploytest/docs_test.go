package deploytest

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const troubleshooting = "docs/troubleshooting.md"

// troubleshootingSections returns the level-2 headings of
// docs/troubleshooting.md with the text under each.
func troubleshootingSections(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	cur := ""
	for _, line := range strings.Split(string(read(t, troubleshooting)), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			cur = strings.TrimSpace(h)
			out[cur] = ""
			continue
		}
		if cur != "" {
			out[cur] += line + "\n"
		}
	}
	return out
}

// Every alert rule has a section of docs/troubleshooting.md named after it
// (what it means, how to confirm it, what to do), every section is a rule,
// and each rule's runbook_url points at its section.
func TestTroubleshootingHasOneSectionPerAlertRule(t *testing.T) {
	sections := troubleshootingSections(t)
	rules := map[string]bool{}
	for _, r := range alertRules(t) {
		name := str(r, "alert")
		rules[name] = true
		body, ok := sections[name]
		if !ok {
			t.Errorf("alert %s has no section \"## %s\" in %s", name, name, troubleshooting)
			continue
		}
		for _, part := range []string{"**Means.**", "**Confirm.**", "**Do.**"} {
			if !strings.Contains(body, part) {
				t.Errorf("%s, section %s: no %s paragraph", troubleshooting, name, part)
			}
		}
		// GitHub's anchor of a heading that is one word: its lower case.
		want := troubleshooting + "#" + strings.ToLower(name)
		if u := str(r, "annotations.runbook_url"); !strings.HasSuffix(u, want) {
			t.Errorf("alert %s: runbook_url %q, want one ending in %s", name, u, want)
		}
	}
	for name := range sections {
		if !rules[name] {
			t.Errorf("%s has a section %q but deploy/prometheus/alerts.yaml no such alert", troubleshooting, name)
		}
	}
	if len(rules) < 10 {
		t.Fatalf("only %d alert rules read", len(rules))
	}
	// The links between sections resolve.
	for _, m := range regexp.MustCompile(`\]\(#([a-z0-9-]+)\)`).FindAllStringSubmatch(string(read(t, troubleshooting)), -1) {
		found := false
		for name := range sections {
			found = found || strings.ToLower(name) == m[1]
		}
		if !found {
			t.Errorf("%s links to #%s, which is no section", troubleshooting, m[1])
		}
	}
	if !strings.Contains(string(read(t, "README.md")), "(docs/troubleshooting.md)") {
		t.Errorf("README.md does not link %s", troubleshooting)
	}
}

// userFacing returns the files a user of the collector reads: the README,
// the changelog, configs/, docs/ and deploy/ (Go test code under deploy/
// excluded).
func userFacing(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "CHANGELOG.md"}
	for _, dir := range []string{"configs", "docs", "deploy"} {
		err := filepath.WalkDir(filepath.Join(root(t), dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if ext := filepath.Ext(path); ext == ".go" || ext == ".sum" || ext == ".mod" {
				return nil
			}
			rel, err := filepath.Rel(root(t), path)
			files = append(files, rel)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return files
}

var (
	// The project's internal specifications, which users do not have.
	specRe = regexp.MustCompile(`\b(CONTRACT|DESIGN|STYLE|FACTS)\b|shared/(spec|seed)|\.\./shared/`)
	// A section of docs/api.md cited by its number.
	sectionRe = regexp.MustCompile(`\bC[1-8]\b`)
)

// README, configs, docs and deploy cite docs/api.md, never the internal
// specification files a user cannot see; a file that cites a section by
// number (C1..C8) says where the sections are.
func TestUserFacingFilesCiteOurDocsNotTheInternalSpecs(t *testing.T) {
	files := userFacing(t)
	if !slices.Contains(files, "docs/api.md") || !slices.Contains(files, troubleshooting) || len(files) < 30 {
		t.Fatalf("user-facing files not found: %v", files)
	}
	for _, f := range files {
		text := string(read(t, f))
		for i, line := range strings.Split(text, "\n") {
			if m := specRe.FindString(line); m != "" {
				t.Errorf("%s:%d names %q, an internal specification users cannot see: cite docs/api.md instead\n%s", f, i+1, m, line)
			}
		}
		if f != "docs/api.md" && sectionRe.MatchString(text) && !strings.Contains(text, "api.md") {
			t.Errorf("%s cites %s but never names docs/api.md, where the sections are", f, sectionRe.FindString(text))
		}
	}
	api := string(read(t, "docs/api.md"))
	for i := 1; i <= 8; i++ {
		if !regexp.MustCompile(`(?m)^## C` + string(rune('0'+i)) + `\. `).MatchString(api) {
			t.Errorf("docs/api.md has no section C%d", i)
		}
	}
}

// The README is what a newcomer needs first: at most about 300 lines, its
// first commands the demo and the whole test suite (CI runs the latter), and
// every page of docs/ reachable from the index it links.
func TestReadmeIsShortAndDocsIndexLinksEveryPage(t *testing.T) {
	t.Parallel()
	readme := string(read(t, "README.md"))
	if n := strings.Count(readme, "\n"); n > 300 {
		t.Errorf("README.md has %d lines: keep it to what a newcomer needs first (at most 300), the rest in docs/", n)
	}
	first := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(readme)
	want := []string{"go run ./cmd/collector run --config configs/demo.yaml --once", "./scripts/test.sh"}
	if first == nil {
		t.Fatal("README.md has no ```sh block")
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(first[1]), "\n") {
		cmd, _, _ := strings.Cut(l, "#")
		got = append(got, strings.TrimSpace(cmd))
	}
	if !slices.Equal(got, want) {
		t.Errorf("README.md's first commands are %q, want %q", got, want)
	}
	if !strings.Contains(readme, "](docs/README.md)") {
		t.Errorf("README.md does not link docs/README.md")
	}

	index := string(read(t, "docs/README.md"))
	pages, err := filepath.Glob(filepath.Join(root(t), "docs", "*.md"))
	if err != nil || len(pages) < 15 {
		t.Fatalf("docs/*.md: %v, %v", pages, err)
	}
	for _, p := range pages {
		name := filepath.Base(p)
		if name == "README.md" {
			continue
		}
		if !strings.Contains(index, "]("+name+")") {
			t.Errorf("docs/README.md does not link %s", name)
		}
		if !strings.Contains(readme, "](docs/"+name) {
			t.Errorf("README.md's \"Where to read on\" does not link docs/%s", name)
		}
	}
	// Every relative link of a docs page names a file that exists.
	link := regexp.MustCompile(`\]\(([^)#:\s]+\.md)(#[^)]*)?\)`)
	for _, p := range append(pages, filepath.Join(root(t), "README.md")) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			if _, err := os.Stat(filepath.Join(filepath.Dir(p), m[1])); err != nil {
				t.Errorf("%s links %s, which does not exist", filepath.Base(p), m[1])
			}
		}
	}
}
