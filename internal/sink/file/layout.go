package file

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// DefaultPath is the default of Config.Path: one directory per stream.
const DefaultPath = "{source}/{account}"

// TenantsPath is the path of a collector with tenants (docs/tenants.md)
// when Config.Path is not set: DefaultPath under one directory per tenant.
const TenantsPath = "{tenant}/{source}/{account}"

// Placeholders of Config.Path. {tenant}, {source} and {account} are whole path
// components (the escaped names); the time fields may stand inside a
// component with literal text ("dt={yyyy}-{mm}-{dd}") and take the UTC
// time the batch's page was fetched (its envelopes' fetched_at).
var timeFields = map[string]struct {
	layout string // time.Format of the field
	re     string // what a directory name holds for it
}{
	"{yyyy}": {"2006", `[0-9]{4}`},
	"{mm}":   {"01", `[0-9]{2}`},
	"{dd}":   {"02", `[0-9]{2}`},
	"{hh}":   {"15", `[0-9]{2}`},
}

// layout is a parsed Config.Path: where below DIR a stream's files go.
type layout struct {
	comps  []layoutComp
	timed  bool // some component holds a time field
	tenant bool // some component is {tenant}
}

type layoutComp struct {
	kind  byte   // 'n' {tenant}, 's' {source}, 'a' {account}, 't' text with time fields
	text  string // for 't': the template of the component
	match *regexp.Regexp
}

// parseLayout parses a Config.Path template; errors name what is wrong,
// not the key.
func parseLayout(path string) (layout, error) {
	var l layout
	if path == "" || strings.HasPrefix(path, "/") || strings.HasSuffix(path, "/") {
		return l, fmt.Errorf("%q must be a relative path of components separated by '/'", path)
	}
	var src, acct bool
	for _, c := range strings.Split(path, "/") {
		switch c {
		case "{source}":
			src = true
			l.comps = append(l.comps, layoutComp{kind: 's'})
			continue
		case "{account}":
			acct = true
			l.comps = append(l.comps, layoutComp{kind: 'a'})
			continue
		case "{tenant}":
			if l.tenant {
				return l, fmt.Errorf("%q: {tenant} twice", path)
			}
			l.tenant = true
			l.comps = append(l.comps, layoutComp{kind: 'n'})
			continue
		case "", ".", "..":
			return l, fmt.Errorf("%q: empty, '.' or '..' component", path)
		}
		if strings.HasPrefix(c, ".") {
			return l, fmt.Errorf("%q: component %q starts with a dot (names with a dot are not the sink's)", path, c)
		}
		var re strings.Builder
		re.WriteString("^")
		rest := c
		for rest != "" {
			i := strings.IndexByte(rest, '{')
			if i < 0 {
				i = len(rest)
			}
			lit := rest[:i]
			for _, r := range lit {
				ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-.=", r)
				if !ok {
					return l, fmt.Errorf("%q: %q in component %q (literal text takes [A-Za-z0-9_.=-])", path, r, c)
				}
			}
			re.WriteString(regexp.QuoteMeta(lit))
			rest = rest[i:]
			if rest == "" {
				break
			}
			j := strings.IndexByte(rest, '}')
			if j < 0 {
				return l, fmt.Errorf("%q: unclosed '{' in component %q", path, c)
			}
			f, ok := timeFields[rest[:j+1]]
			if !ok {
				return l, fmt.Errorf("%q: unknown placeholder %s (known: {tenant}, {source} and {account} as whole components; {yyyy} {mm} {dd} {hh})", path, rest[:j+1])
			}
			re.WriteString(f.re)
			l.timed = true
			rest = rest[j+1:]
		}
		re.WriteString("$")
		l.comps = append(l.comps, layoutComp{kind: 't', text: c, match: regexp.MustCompile(re.String())})
	}
	if !src || !acct {
		return l, fmt.Errorf("%q must hold {source} and {account}, each as a whole component", path)
	}
	return l, nil
}

// dir is the directory of stream (escaped ten, src, acct) for a page
// fetched at t, relative to DIR.
func (l layout) dir(ten, src, acct string, t time.Time) string {
	parts := make([]string, len(l.comps))
	t = t.UTC()
	for i, c := range l.comps {
		switch c.kind {
		case 'n':
			parts[i] = ten
		case 's':
			parts[i] = src
		case 'a':
			parts[i] = acct
		default:
			s := c.text
			for f, v := range timeFields {
				s = strings.ReplaceAll(s, f, t.Format(v.layout))
			}
			parts[i] = s
		}
	}
	return filepath.Join(parts...)
}

// walk calls fn for every existing directory below root that the layout
// gives a stream, with the stream's escaped names (ten "" when the layout
// has no {tenant}); src or acct "" takes any, and so does any tenant.
// Names starting with a dot are skipped. A missing root holds none.
func (l layout) walk(root, src, acct string, fn func(dir, ten, src, acct string) error) error {
	var rec func(dir string, i int, n, s, a string) error
	rec = func(dir string, i int, n, s, a string) error {
		if i == len(l.comps) {
			return fn(dir, n, s, a)
		}
		c := l.comps[i]
		fixed := ""
		switch c.kind {
		case 's':
			fixed = src
		case 'a':
			fixed = acct
		}
		if fixed != "" {
			next := filepath.Join(dir, fixed)
			if fi, err := os.Stat(next); err != nil || !fi.IsDir() {
				if err == nil || errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if c.kind == 's' {
				return rec(next, i+1, n, fixed, a)
			}
			return rec(next, i+1, n, s, fixed)
		}
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, e := range entries {
			name := e.Name()
			if !e.IsDir() || strings.HasPrefix(name, ".") || (c.kind == 't' && !c.match.MatchString(name)) {
				continue
			}
			nn, ns, na := n, s, a
			switch c.kind {
			case 'n':
				nn = name
			case 's':
				ns = name
			case 'a':
				na = name
			}
			if err := rec(filepath.Join(dir, name), i+1, nn, ns, na); err != nil {
				return err
			}
		}
		return nil
	}
	return rec(root, 0, "", "", "")
}

// StreamDirs returns the directories below root that hold files of the
// stream (source, account) when the sink writes with path template path
// (Config.Path; "" is DefaultPath). An empty account takes every account
// of source. Readers (collector verify) use it to find a stream's files.
func StreamDirs(root, path, source, account string) ([]string, error) {
	if path == "" {
		path = DefaultPath
	}
	l, err := parseLayout(path)
	if err != nil {
		return nil, fmt.Errorf("sink.file.path: %w", err)
	}
	acct := ""
	if account != "" {
		acct = escapeName(account)
	}
	var out []string
	err = l.walk(root, escapeName(source), acct, func(dir, _, _, _ string) error {
		out = append(out, dir)
		return nil
	})
	return out, err
}
