package deploytest

import (
	"io/fs"
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
