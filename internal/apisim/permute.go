package apisim

import "math/bits"

// perm is a pseudo-random permutation of [0, n): a four-round Feistel
// network over the smallest even-width bit domain holding n, with cycle
// walking to stay inside [0, n). It lets page k of a shuffled window find
// its rows without materializing the order. The zero value permutes nothing.
type perm struct {
	n    uint64
	half uint
	mask uint64
	keys [4]uint64
}

func newPerm(n, key uint64) perm {
	p := perm{n: n}
	if n <= 1 {
		return p
	}
	w := uint(bits.Len64(n - 1))
	if w < 2 {
		w = 2
	}
	w += w & 1
	p.half = w / 2
	p.mask = 1<<p.half - 1
	for k := range p.keys {
		key = mix64(key + golden)
		p.keys[k] = key
	}
	return p
}

// at returns the j-th element of the permutation, j in [0, n).
func (p *perm) at(j uint64) uint64 {
	if p.n <= 1 {
		return j
	}
	x := j
	for {
		x = p.enc(x)
		if x < p.n {
			return x
		}
	}
}

func (p *perm) enc(x uint64) uint64 {
	l, r := x>>p.half, x&p.mask
	for _, k := range p.keys {
		l, r = r, l^(mix64(r^k)&p.mask)
	}
	return l<<p.half | r
}
