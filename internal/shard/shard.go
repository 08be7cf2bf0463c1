// Package shard spreads a collector's tenants over N collectors
// (docs/tenants.md, "More collectors"): rendezvous (highest random
// weight) hashing of a tenant's name over the shard indexes 0..N-1, so
// that every tenant has exactly one owner, computed by every collector
// alone from the name and N (no coordination, no global state), and going
// from N to N+1 shards moves only the tenants the new shard wins, about
// 1/(N+1) of them. Start at Parse and Shard.Owns.
package shard

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Shard is one collector's place among Count collectors: it runs the
// tenants whose owner is Index. The zero Shard is "not sharded" (one
// collector owns everything).
type Shard struct {
	Index, Count int
}

// Sharded says whether s splits the tenants (Count > 1).
func (s Shard) Sharded() bool { return s.Count > 1 }

// String is "INDEX/COUNT", the form Parse reads.
func (s Shard) String() string {
	if s.Count == 0 {
		return "0/1"
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Owns says whether tenant is s's: Owner(tenant, s.Count) == s.Index.
// The zero Shard owns every tenant.
func (s Shard) Owns(tenant string) bool {
	if s.Count <= 1 {
		return true
	}
	return Owner(tenant, s.Count) == s.Index
}

// Owner returns the index in 0..n-1 of the shard that owns tenant: the
// index whose weight (weight) is the highest. n < 1 counts as 1.
func Owner(tenant string, n int) int {
	best, bestW := 0, uint64(0)
	for i := 0; i < n; i++ {
		if w := weight(tenant, i); i == 0 || w > bestW {
			best, bestW = i, w
		}
	}
	return best
}

// weight is the first 8 bytes of SHA-256(name NUL index as decimal): stable
// across versions, machines and Go releases (a change would move
// tenants without their progress, so it never changes).
func weight(tenant string, index int) uint64 {
	sum := sha256.Sum256([]byte(tenant + "\x00" + strconv.Itoa(index)))
	return binary.BigEndian.Uint64(sum[:8])
}

// OrdinalPrefix is the index of Spec that takes the index from the
// host name's StatefulSet ordinal ("ordinal/3").
const OrdinalPrefix = "ordinal"

// MaxCount bounds N: far more collectors than anyone runs, small enough
// that Owner stays cheap.
const MaxCount = 1024

// Parse reads "INDEX/COUNT" (0 <= INDEX < COUNT <= MaxCount). "" is the
// zero Shard.
func Parse(s string) (Shard, error) {
	if s == "" {
		return Shard{}, nil
	}
	is, ns, ok := strings.Cut(s, "/")
	if !ok {
		return Shard{}, fmt.Errorf("shard %q: want INDEX/COUNT, e.g. 0/3", s)
	}
	n, err := strconv.Atoi(ns)
	if err != nil || n < 1 || n > MaxCount {
		return Shard{}, fmt.Errorf("shard %q: COUNT must be a whole number from 1 to %d", s, MaxCount)
	}
	i, err := strconv.Atoi(is)
	if err != nil || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("shard %q: INDEX must be a whole number from 0 to %d", s, n-1)
	}
	return Shard{Index: i, Count: n}, nil
}

// Resolve reads spec as Parse does, and also "ordinal/COUNT", whose index
// is the ordinal of hostname (Ordinal): a StatefulSet's pod NAME-2 is
// shard 2.
func Resolve(spec, hostname string) (Shard, error) {
	rest, ok := strings.CutPrefix(spec, OrdinalPrefix+"/")
	if !ok {
		return Parse(spec)
	}
	i, err := Ordinal(hostname)
	if err != nil {
		return Shard{}, fmt.Errorf("shard %q: %w", spec, err)
	}
	return Parse(strconv.Itoa(i) + "/" + rest)
}

// ErrNoOrdinal is Ordinal's error for a host name without one.
var ErrNoOrdinal = errors.New("the host name does not end in -ORDINAL (a StatefulSet pod's name)")

// Ordinal returns the ordinal of a StatefulSet pod from its host name,
// NAME-ORDINAL (the pod's name is its host name): "collector-2" is 2.
func Ordinal(hostname string) (int, error) {
	h, _, _ := strings.Cut(hostname, ".") // a full name's first label
	k := strings.LastIndexByte(h, '-')
	if k <= 0 || k == len(h)-1 {
		return 0, fmt.Errorf("%q: %w", hostname, ErrNoOrdinal)
	}
	digits := h[k+1:]
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q: %w", hostname, ErrNoOrdinal)
		}
	}
	n, err := strconv.Atoi(digits)
	if err != nil || (len(digits) > 1 && digits[0] == '0') {
		return 0, fmt.Errorf("%q: %w", hostname, ErrNoOrdinal)
	}
	return n, nil
}
