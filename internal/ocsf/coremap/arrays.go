package coremap

import "github.com/svcexport/collector/internal/ocsf/ocsfjson"

// first returns the first element of the array raw and the number of
// elements; ok is false when raw is not an array.
func first(raw []byte) (elem []byte, n int, ok bool) {
	it, ok := ocsfjson.ArrayElements(raw)
	if !ok {
		return nil, 0, false
	}
	for {
		v, more := it.Next()
		if !more {
			return elem, n, true
		}
		if n == 0 {
			elem = v
		}
		n++
	}
}

// head1 returns the first element of the array raw, or nil.
func head1(raw []byte) []byte {
	it, ok := ocsfjson.ArrayElements(raw)
	if !ok {
		return nil
	}
	v, _ := it.Next()
	return v
}

// oneString reads raw as an array holding exactly one string and returns
// it.
func oneString(raw []byte) ([]byte, bool) {
	v, n, ok := first(raw)
	if !ok || n != 1 || !ocsfjson.IsString(v) {
		return nil, false
	}
	return v, true
}
