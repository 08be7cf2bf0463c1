package apisim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Filters of the advanced search (seed, "Simple and advanced search"): 16
// expressions, all filters of a request AND-ed. Operand rules are enforced:
// eq, ne, like, ilike, rlike, gt, lt, ge, le (and their negations) take
// "value" only; in and not_in take "values" only; between takes exactly two
// "values" with the upper greater than the lower; expr is reserved.

type op uint8

const (
	opEq op = iota
	opIn
	opLike
	opILike
	opRLike
	opGt
	opLt
	opGe
	opLe
	opBetween
)

type filter struct {
	expr   string
	path   []string
	op     op
	negate bool
	value  string
	values []string
	num    float64 // value as a number when isNum
	isNum  bool
	nums   []float64 // values as numbers when allNum
	allNum bool
	re     *regexp.Regexp // like, ilike, rlike
}

// lookupExpr returns the operator of an expression name, whether it is the
// negated one of its pair, and whether it takes "values" (else "value").
func lookupExpr(name string) (o op, negate, many, ok bool) {
	switch name {
	case "eq", "ne":
		return opEq, name == "ne", false, true
	case "in", "not_in":
		return opIn, name == "not_in", true, true
	case "like", "not_like":
		return opLike, name == "not_like", false, true
	case "ilike", "not_ilike":
		return opILike, name == "not_ilike", false, true
	case "rlike", "not_rlike":
		return opRLike, name == "not_rlike", false, true
	case "gt":
		return opGt, false, false, true
	case "lt":
		return opLt, false, false, true
	case "ge":
		return opGe, false, false, true
	case "le":
		return opLe, false, false, true
	case "between":
		return opBetween, false, true, true
	}
	return 0, false, false, false
}

// parseFilters validates the "filters" member of a search body for source
// si. Every violation of the seed's rules is an error (400).
func parseFilters(raw json.RawMessage, si *sourceInfo) ([]filter, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("filters must be an array of filter objects")
	}
	out := make([]filter, 0, len(items))
	for k, item := range items {
		f, err := parseFilter(item, si)
		if err != nil {
			return nil, fmt.Errorf("filters[%d]: %w", k, err)
		}
		out = append(out, f)
	}
	return out, nil
}

func parseFilter(raw json.RawMessage, si *sourceInfo) (filter, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return filter{}, fmt.Errorf("a filter must be an object with expression, field and value or values")
	}
	for k := range m {
		switch k {
		case "expression", "field", "value", "values":
		default:
			return filter{}, fmt.Errorf("unknown member %q", k)
		}
	}
	var f filter
	if err := jsonString(m["expression"], &f.expr); err != nil {
		return filter{}, fmt.Errorf("expression: %w", err)
	}
	if f.expr == "expr" {
		return filter{}, fmt.Errorf("expression expr is reserved for future use")
	}
	o, negate, many, ok := lookupExpr(f.expr)
	if !ok {
		return filter{}, fmt.Errorf("unknown expression %q", f.expr)
	}
	f.op, f.negate = o, negate
	var field string
	if err := jsonString(m["field"], &field); err != nil {
		return filter{}, fmt.Errorf("field: %w", err)
	}
	path, err := parseFieldPath(field)
	if err != nil {
		return filter{}, err
	}
	if !si.hasField(path[0]) {
		return filter{}, fmt.Errorf("field %q is not a field of %s records", path[0], si.name)
	}
	f.path = path
	_, hasValue := m["value"]
	_, hasValues := m["values"]
	if many {
		if hasValue {
			return filter{}, fmt.Errorf("%s takes values, not value", f.expr)
		}
		if f.values, err = stringArray(m["values"]); err != nil {
			return filter{}, fmt.Errorf("%s needs values, an array of strings", f.expr)
		}
		if len(f.values) == 0 {
			return filter{}, fmt.Errorf("%s needs at least one value", f.expr)
		}
		f.allNum = true
		for _, v := range f.values {
			n, err := strconv.ParseFloat(v, 64)
			f.nums = append(f.nums, n)
			f.allNum = f.allNum && err == nil
		}
		if f.op == opBetween {
			if len(f.values) != 2 {
				return filter{}, fmt.Errorf("between needs exactly two values, got %d", len(f.values))
			}
			if (f.allNum && f.nums[1] <= f.nums[0]) || (!f.allNum && f.values[1] <= f.values[0]) {
				return filter{}, fmt.Errorf("between: the upper boundary %q must be greater than the lower %q", f.values[1], f.values[0])
			}
		}
		return f, nil
	}
	if hasValues {
		return filter{}, fmt.Errorf("%s takes value, not values", f.expr)
	}
	if !hasValue {
		return filter{}, fmt.Errorf("%s needs value", f.expr)
	}
	if err := jsonString(m["value"], &f.value); err != nil {
		return filter{}, fmt.Errorf("value: %w", err)
	}
	if n, err := strconv.ParseFloat(f.value, 64); err == nil {
		f.num, f.isNum = n, true
	}
	switch f.op {
	case opLike, opILike:
		f.re = likeRegexp(f.value, f.op == opILike)
	case opRLike:
		if f.re, err = regexp.Compile(f.value); err != nil {
			return filter{}, fmt.Errorf("rlike: invalid regular expression: %w", err)
		}
	}
	return f, nil
}

// stringArray decodes a JSON array whose every element is a string.
func stringArray(raw json.RawMessage) ([]string, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || items == nil {
		return nil, fmt.Errorf("not an array")
	}
	out := make([]string, len(items))
	for i, it := range items {
		if err := jsonString(it, &out[i]); err != nil {
			return nil, fmt.Errorf("element %d %w", i, err)
		}
	}
	return out, nil
}

func jsonString(raw json.RawMessage, dst *string) error {
	if len(raw) == 0 {
		return fmt.Errorf("missing")
	}
	if err := json.Unmarshal(raw, dst); err != nil || raw[0] != '"' {
		return fmt.Errorf("must be a string")
	}
	return nil
}

// parseFieldPath splits a field name at dots. A part holding special
// characters is written in double quotes, and a slash in it is preceded by
// a backslash (seed): tags."kubernetes.io\/role".
func parseFieldPath(s string) ([]string, error) {
	if s == "" {
		return nil, fmt.Errorf("field must not be empty")
	}
	var parts []string
	for i := 0; i <= len(s); {
		if i == len(s) {
			return nil, fmt.Errorf("field %q ends with a dot", s)
		}
		var part strings.Builder
		if s[i] == '"' {
			i++
			closed := false
			for i < len(s) {
				c := s[i]
				if c == '\\' && i+1 < len(s) {
					part.WriteByte(s[i+1])
					i += 2
					continue
				}
				if c == '"' {
					closed = true
					i++
					break
				}
				part.WriteByte(c)
				i++
			}
			if !closed {
				return nil, fmt.Errorf("field %q has an unterminated quote", s)
			}
		} else {
			for i < len(s) && s[i] != '.' {
				if s[i] == '"' {
					return nil, fmt.Errorf("field %q has a quote inside a name", s)
				}
				part.WriteByte(s[i])
				i++
			}
		}
		if part.Len() == 0 {
			return nil, fmt.Errorf("field %q has an empty part", s)
		}
		parts = append(parts, part.String())
		if i == len(s) {
			break
		}
		if s[i] != '.' {
			return nil, fmt.Errorf("field %q: expected a dot after a quoted part", s)
		}
		i++
	}
	return parts, nil
}

// likeRegexp turns a like pattern into an anchored regular expression: %
// matches any run of characters, _ exactly one; a backslash makes the next
// character literal.
func likeRegexp(p string, fold bool) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("(?s)")
	if fold {
		b.WriteString("(?i)")
	}
	b.WriteByte('^')
	esc := false
	for _, r := range p {
		switch {
		case esc:
			b.WriteString(regexp.QuoteMeta(string(r)))
			esc = false
		case r == '\\':
			esc = true
		case r == '%':
			b.WriteString(".*")
		case r == '_':
			b.WriteByte('.')
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	if esc {
		b.WriteString(`\\`)
	}
	b.WriteByte('$')
	return regexp.MustCompile(b.String())
}

// match reports whether record r satisfies every filter.
func match(r *rec, fs []filter) bool {
	for k := range fs {
		if !fs[k].holds(r) {
			return false
		}
	}
	return true
}

// holds evaluates one filter: the positive expression holds when any value
// the path reaches (through arrays, every element) satisfies it; a missing
// field satisfies none. A negated expression is the negation of its pair.
func (f *filter) holds(r *rec) bool {
	return f.negate != f.any(r, 0, f.path)
}

func (f *filter) any(r *rec, j int32, path []string) bool {
	t := &r.toks[j]
	switch {
	case len(path) == 0:
		return f.test(r, j)
	case t.kind == kObj:
		for c := j + 1; c < t.end; c = r.toks[c].end {
			if r.toks[c].key == path[0] {
				return f.any(r, c, path[1:])
			}
		}
		return false
	case t.kind == kArr:
		for c := j + 1; c < t.end; c = r.toks[c].end {
			if f.any(r, c, path) {
				return true
			}
		}
	}
	return false
}

// test applies the positive expression to the value at token j. Numbers are
// compared as numbers when the operand is a number too, everything else as
// strings; objects and arrays match rlike against their JSON text.
func (f *filter) test(r *rec, j int32) bool {
	t := &r.toks[j]
	var sv []byte
	var scratch [24]byte
	isNum := false
	var nv float64
	switch t.kind {
	case kStr:
		sv = r.bytesOf(t)
	case kInt:
		sv = strconv.AppendInt(scratch[:0], t.n, 10)
		isNum, nv = true, float64(t.n)
	case kBool:
		sv = []byte("false")
		if t.n != 0 {
			sv = []byte("true")
		}
	case kNull:
		sv = []byte("null")
	default:
		if f.op != opRLike {
			if t.kind == kArr { // an array of scalars: any element
				for c := j + 1; c < t.end; c = r.toks[c].end {
					if r.toks[c].kind < kObj && f.test(r, c) {
						return true
					}
				}
			}
			return false
		}
		sv = r.canonValue(nil, j)
	}
	switch f.op {
	case opEq:
		if isNum && f.isNum {
			return nv == f.num
		}
		return string(sv) == f.value
	case opIn:
		for k, v := range f.values {
			if isNum && f.allNum {
				if nv == f.nums[k] {
					return true
				}
			} else if string(sv) == v {
				return true
			}
		}
		return false
	case opLike, opILike, opRLike:
		return f.re.Match(sv)
	case opBetween:
		if isNum && f.allNum {
			return nv >= f.nums[0] && nv <= f.nums[1]
		}
		return string(sv) >= f.values[0] && string(sv) <= f.values[1]
	}
	var c int
	if isNum && f.isNum {
		switch {
		case nv < f.num:
			c = -1
		case nv > f.num:
			c = 1
		}
	} else {
		c = bytes.Compare(sv, []byte(f.value))
	}
	switch f.op {
	case opGt:
		return c > 0
	case opLt:
		return c < 0
	case opGe:
		return c >= 0
	default: // opLe
		return c <= 0
	}
}
