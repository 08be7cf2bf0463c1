package config

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/svcexport/collector/internal/config/expand"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/source/catalog"
)

// LoadOptions change what LoadWith requires of the environment.
type LoadOptions struct {
	// Offline validates without what a CI job linting a file lacks: the
	// secrets (a secret that is not set is not a problem), the files a
	// ${file:PATH} names (not read) and the variables a ${NAME} names (an
	// unset one leaves its key at its default, unchecked). Such keys are
	// listed in Loaded.Notes. Nothing is read but the file and the
	// environment.
	Offline bool
	// SecretsOptional accepts a configuration whose secrets are not set
	// (nor their ${...} references resolved), for the commands that need
	// none (state); Offline implies it.
	SecretsOptional bool
}

// Loaded is a configuration as LoadWith read it.
type Loaded struct {
	// Config is the configuration; when LoadWith also returns an error, it
	// is the configuration as far as it could be read (a key with a
	// problem keeps its default), for checks of their own by the caller.
	Config Config
	// Notes are what the caller should tell (on standard error) but that
	// is not a problem: the keys an offline load left unchecked.
	Notes []string
}

// LoadWith reads the file at path (may be empty: defaults only) and environ
// (KEY=VALUE, usually os.Environ()) and validates the result, reporting
// every problem in one pass: unknown keys, references (${...}) that cannot
// be resolved, values of the wrong type and values that are wrong for the
// collector. Its error joins one *KeyError per problem (Problems splits
// it), in that order; a file that cannot be read or parsed at all is a
// plain error.
func LoadWith(path string, environ []string, o LoadOptions) (Loaded, error) {
	cfg := Default()
	var lenient func(string) bool
	switch {
	case o.Offline:
		lenient = func(string) bool { return true }
	case o.SecretsOptional:
		tags := secretTags()
		lenient = func(key string) bool { return tags[lastSegment(key)] }
	}
	res, err := load(path, environ, &cfg, lenient)
	if err != nil {
		return Loaded{}, err
	}
	fillDefaultSources(cfg.Sources)
	if len(cfg.Tenants) > 0 {
		tenantPaths(&cfg)
	}
	out := Loaded{Config: cfg}
	if o.Offline {
		for _, key := range sortedKeys(res.left) {
			out.Notes = append(out.Notes, fmt.Sprintf("%s: %s is not resolved offline; the key keeps its default and is not checked", key, res.left[key]))
		}
	}

	problems := res.problems
	if len(cfg.Tenants) > 0 {
		problems = append(problems, bothForms(res.top)...)
	}
	// A key already reported (or left unresolved) is not reported again
	// for the default it kept.
	skip := func(key string) bool {
		for _, p := range res.problems {
			if ke, ok := p.(*KeyError); ok && covers(ke.Key, key) {
				return true
			}
		}
		for k := range res.left {
			if covers(k, key) {
				return true
			}
		}
		return false
	}
	for _, p := range Problems(cfg.Validate()) {
		ke := asKeyError(p)
		if ke.Key != "" && skip(ke.Key) {
			continue
		}
		if (o.Offline || o.SecretsOptional) && isMissingSecret(ke) {
			continue
		}
		problems = append(problems, ke)
	}
	if !o.Offline && !o.SecretsOptional {
		problems = append(problems, redactedSecrets(cfg)...)
	}
	return out, joinProblems(problems)
}

// fillDefaultSources completes the sources "default" block with the
// built-in settings it leaves unset, which it inherits anyway (see
// catalog.SourcesConfig.Resolve), so that a printed configuration shows
// every default.
func fillDefaultSources(s catalog.SourcesConfig) {
	if s == nil {
		return
	}
	d := catalog.DefaultSource()
	b := s[catalog.DefaultSourcesKey]
	if b.Enabled == nil {
		b.Enabled = &d.Enabled
	}
	if b.Start == nil {
		b.Start = &d.Start
	}
	if b.Lag == nil {
		b.Lag = &d.Lag
	}
	if b.Interval == nil {
		b.Interval = (*catalog.Interval)(&d.Interval)
	}
	if b.MaxWindow == nil {
		b.MaxWindow = &d.MaxWindow
	}
	if b.Overlap == nil {
		b.Overlap = &d.Overlap
	}
	if b.Recheck == nil {
		b.Recheck = &d.Recheck
	}
	if b.RecheckHorizon == nil {
		b.RecheckHorizon = &d.RecheckHorizon
	}
	if b.RecheckShare == nil {
		b.RecheckShare = &d.RecheckShare
	}
	s[catalog.DefaultSourcesKey] = b
}

// Problems splits an error of Load, LoadWith or Validate into its
// problems, one line each: nested joins are flattened, multi-line
// messages folded onto one line.
func Problems(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, Problems(e)...)
		}
		return out
	}
	if strings.Contains(err.Error(), "\n") {
		if ke, ok := err.(*KeyError); ok {
			return []error{&KeyError{Key: ke.Key, Msg: oneLine(ke.Msg)}}
		}
		return []error{errors.New(oneLine(err.Error()))}
	}
	return []error{err}
}

// Lines renders the problems of err one a line, at most limit of them and
// then a line counting the rest (limit <= 0: no limit).
func Lines(err error, limit int) []string {
	var out []string
	ps := Problems(err)
	for i, p := range ps {
		if limit > 0 && i == limit {
			out = append(out, fmt.Sprintf("... and %d more problems", len(ps)-limit))
			break
		}
		out = append(out, p.Error())
	}
	return out
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// joinProblems joins problems, dropping repeats of the same line.
func joinProblems(problems []error) error {
	seen := map[string]bool{}
	var out []error
	for _, p := range problems {
		if p == nil || seen[p.Error()] {
			continue
		}
		seen[p.Error()] = true
		out = append(out, p)
	}
	return errors.Join(out...)
}

// asKeyError returns p as a KeyError: the "key: message" errors of the
// sections' Validate methods become one.
func asKeyError(p error) *KeyError {
	var ke *KeyError
	if errors.As(p, &ke) {
		return ke
	}
	key, msg, ok := strings.Cut(p.Error(), ": ")
	if !ok || strings.ContainsAny(key, " \t") {
		return &KeyError{Msg: p.Error()}
	}
	return &KeyError{Key: key, Msg: msg}
}

// normalizeKey writes list indexes as key segments: a[0].b -> a.0.b.
func normalizeKey(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "[", "."), "]", "")
}

// covers reports whether a problem at key a also stands for one at key b:
// the same key, or b under a.
func covers(a, b string) bool {
	a, b = normalizeKey(a), normalizeKey(b)
	return a == b || strings.HasPrefix(b, a+".")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// secretType is the type of every credential of the configuration.
var secretType = reflect.TypeOf(secret.Secret{})

// isMissingSecret reports a "must be set" problem of a secret key (a
// field of type secret.Secret: api.secret, edge.token, the sinks'
// passwords), which the offline check does not require.
func isMissingSecret(ke *KeyError) bool {
	if !strings.HasPrefix(ke.Msg, "must be set") {
		return false
	}
	return secretTags()[lastSegment(ke.Key)]
}

// lastSegment is the last name of a dotted key: api.secret -> secret.
func lastSegment(key string) string {
	segs := strings.Split(normalizeKey(key), ".")
	return segs[len(segs)-1]
}

// secretTags returns the key names of the configuration's secret fields
// (secret, token, password), wherever they are.
func secretTags() map[string]bool {
	tags := map[string]bool{}
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map || t.Kind() == reflect.Array {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := strings.Split(f.Tag.Get("koanf"), ",")[0]
			if f.Type == secretType {
				tags[tag] = true
				continue
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeOf(Config{}))
	return tags
}

// redactedSecrets reports every secret whose value is the redacted
// placeholder a printed configuration shows ("[redacted]"): a file printed
// by `collector check --print` needs its secrets supplied again, through
// the environment or a *_file key, and must not run with the placeholder.
func redactedSecrets(cfg Config) []error {
	var errs []error
	var walk func(key string, v reflect.Value)
	walk = func(key string, v reflect.Value) {
		switch {
		case v.Type() == secretType:
			if s, _ := v.Interface().(secret.Secret); s.Reveal() == secret.Redacted {
				env := EnvPrefix + strings.ToUpper(strings.ReplaceAll(normalizeKey(key), ".", "__"))
				errs = append(errs, &KeyError{Key: key, Msg: fmt.Sprintf(
					"holds %s, the placeholder of a printed configuration: supply the secret through %s or %s_file", secret.Redacted, env, key)})
			}
		case v.Kind() == reflect.Pointer:
			if !v.IsNil() {
				walk(key, v.Elem())
			}
		case v.Kind() == reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				f := v.Type().Field(i)
				if !f.IsExported() {
					continue
				}
				tag := strings.Split(f.Tag.Get("koanf"), ",")[0]
				if tag == "" || tag == "-" {
					continue
				}
				walk(expand.JoinKey(key, tag), v.Field(i))
			}
		case v.Kind() == reflect.Slice || v.Kind() == reflect.Array:
			for i := 0; i < v.Len(); i++ {
				walk(fmt.Sprintf("%s[%d]", key, i), v.Index(i))
			}
		case v.Kind() == reflect.Map:
			iter := v.MapRange()
			for iter.Next() {
				walk(expand.JoinKey(key, fmt.Sprint(iter.Key().Interface())), iter.Value())
			}
		}
	}
	walk("", reflect.ValueOf(cfg))
	return errs
}
