// Package expand resolves the references of a configuration file's values
// (${NAME}, ${env:NAME}, ${NAME:-default}, ${file:PATH}, $${ for a
// literal ${), key by key, without ever putting a variable's or a file's
// content in an error. It knows nothing of the collector's keys: package
// config loads the file and turns its KeyErrors into its own.
package expand

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/svcexport/collector/internal/secret"
)

// References in the file's values, as the OpenTelemetry Collector and
// Vector users write them:
//
//	${NAME}            the environment variable NAME (an error when unset)
//	${env:NAME}        the same
//	${NAME:-default}   NAME, or default when NAME is unset or empty
//	${file:PATH}       the content of the file PATH, one trailing newline
//	                   trimmed (a relative PATH is relative to the working
//	                   directory, as every *_file key is); a regular file
//	                   of at most secret.MaxFileBytes (secret.ReadFile)
//	$${                a literal ${
//
// A "$" anywhere else is literal, so a password holding one needs no
// escaping. Only values in the file are expanded, never the environment's
// COLLECTOR_* values.

var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// unresolved is an expansion a lenient load did not make: an unset
// variable, or a file it must not read.
type unresolved struct{ ref string }

func (u *unresolved) Error() string { return u.ref + " not resolved" }

// expander expands the references of one load.
type expander struct {
	env map[string]string
	// lenient says which keys may stay unresolved: their unset variables
	// and their files (not read) are left alone, not errors. nil: none.
	lenient func(key string) bool
}

func newExpander(environ []string, lenient func(key string) bool) *expander {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return &expander{env: env, lenient: lenient}
}

// expand returns s with every reference replaced. Its error never holds a
// variable's or a file's content: a secret may be one. With lenient, an
// *unresolved error says a reference was left alone.
func (e *expander) expand(s string, lenient bool) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "$")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		s = s[i:]
		switch {
		case strings.HasPrefix(s, "$${"):
			b.WriteString("${")
			s = s[3:]
		case strings.HasPrefix(s, "${"):
			end := strings.IndexByte(s, '}')
			if end < 0 {
				return "", fmt.Errorf("%q has a ${ without its closing } (write $${ for a literal ${)", clip(s))
			}
			v, err := e.resolve(s[:end+1], lenient)
			if err != nil {
				return "", err
			}
			b.WriteString(v)
			s = s[end+1:]
		default:
			b.WriteByte('$')
			s = s[1:]
		}
	}
}

// resolve returns the value of one reference ref, "${...}".
func (e *expander) resolve(ref string, lenient bool) (string, error) {
	body := ref[2 : len(ref)-1]
	if path, ok := strings.CutPrefix(body, "file:"); ok {
		if path == "" {
			return "", fmt.Errorf("%s names no file", ref)
		}
		if lenient {
			return "", &unresolved{ref: ref}
		}
		b, err := secret.ReadFile(path, secret.MaxFileBytes)
		if err != nil {
			return "", fmt.Errorf("%s: %s", ref, secret.FileProblem(path, err))
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	body = strings.TrimPrefix(body, "env:")
	name, def, hasDef := strings.Cut(body, ":-")
	if !varName.MatchString(name) {
		return "", fmt.Errorf("%s is not a variable name (${NAME}, ${NAME:-default}, ${file:PATH}; $${ for a literal ${)", ref)
	}
	v, set := e.env[name]
	switch {
	case hasDef && v == "":
		return def, nil
	case set:
		return v, nil
	case lenient:
		return "", &unresolved{ref: ref}
	}
	return "", fmt.Errorf("environment variable %s is not set (referenced as %s)", name, ref)
}

// Quote returns s written as a value of the file whose expansion is s
// again: every ${ becomes $${, the only escape the references know (a "$"
// anywhere else is literal). A run of n dollars before a "{" becomes n+1,
// which expands back to n. A printed configuration quotes every string
// value, so that loading it back neither reads a file nor changes a value.
func Quote(s string) string { return strings.ReplaceAll(s, "${", "$${") }

// clip shortens s for a message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}

// KeyError is a reference that failed: the key whose value held it, and
// why (never the variable's or the file's content).
type KeyError struct {
	Key string
	Msg string
}

// Error returns "key: message".
func (e *KeyError) Error() string { return e.Key + ": " + e.Msg }

// Tree expands every string of the parsed file m in place, lists
// included, with the variables of environ ("NAME=value"). lenient says
// which keys may stay unresolved (nil: none). It returns a KeyError per
// reference that failed, and the keys a lenient load left unresolved
// (with what they referred to), which the caller removes so that they
// keep their defaults.
func Tree(environ []string, lenient func(key string) bool, m map[string]any) (errs []*KeyError, left map[string]string) {
	return newExpander(environ, lenient).tree(m)
}

func (e *expander) tree(m map[string]any) (errs []*KeyError, left map[string]string) {
	left = map[string]string{}
	var walk func(key string, v any) (any, bool)
	walk = func(key string, v any) (any, bool) {
		switch x := v.(type) {
		case string:
			out, err := e.expand(x, e.lenient != nil && e.lenient(key))
			var u *unresolved
			switch {
			case errors.As(err, &u):
				left[key] = u.ref
				return nil, false
			case err != nil:
				errs = append(errs, &KeyError{Key: key, Msg: err.Error()})
				return nil, false
			}
			return out, true
		case map[string]any:
			for k, sub := range x {
				nv, ok := walk(JoinKey(key, k), sub)
				if ok {
					x[k] = nv
				} else {
					delete(x, k)
				}
			}
			return x, true
		case []any:
			out := x[:0]
			for i, sub := range x {
				elem := fmt.Sprintf("%s[%d]", key, i)
				nv, ok := walk(elem, sub)
				if !ok {
					// A list with an element left out would load as a
					// different list: the whole key waits.
					if ref, isLeft := left[elem]; isLeft {
						delete(left, elem)
						left[key] = ref
					}
					return nil, false
				}
				out = append(out, nv)
			}
			return out, true
		}
		return v, true
	}
	for k, v := range m {
		nv, ok := walk(k, v)
		if ok {
			m[k] = nv
		} else {
			delete(m, k)
		}
	}
	return errs, left
}

// JoinKey is the dotted key of k under prefix ("" for the top level).
func JoinKey(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}
