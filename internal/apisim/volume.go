package apisim

import "math"

// stream is one (source, account) series of records. Its volume is a pure
// function of the minute: minute m holds count(m) records, record i of
// minute m has key recKey(m, i) and a time inside that minute drawn from the
// key. Any window's size is found by arithmetic over its minutes, and only
// the two boundary minutes need their record times generated.
type stream struct {
	src     sourceID
	account string
	key     uint64
	// perHour is the configured rate; the wave and bursts shape it.
	perHour             float64
	amp, phase          float64
	burstP, burstFactor float64
}

func newStream(cfg *Config, seed uint64, src sourceID, account string) *stream {
	name := src.info().name
	key := mix64(hashString(seed, name) ^ mix64(hashString(seed+1, account)))
	return &stream{
		src:         src,
		account:     account,
		key:         key,
		perHour:     cfg.rate(name, account),
		amp:         cfg.WaveAmplitude,
		phase:       unit(mix64(key^0x1234)) * 2 * math.Pi,
		burstP:      cfg.BurstProbability,
		burstFactor: cfg.BurstFactor,
	}
}

// lambda is the expected records per minute during hour h (hours since the
// epoch): the rate, a daily wave with a per-stream phase, and bursts.
func (st *stream) lambda(h int64) float64 {
	hod := float64(floorMod(h, 24))
	l := st.perHour / 60 * (1 + st.amp*math.Sin(2*math.Pi*hod/24+st.phase))
	if st.burstP > 0 && unit(mix64(st.key^uint64(h)*saltHour)) < st.burstP {
		l *= st.burstFactor
	}
	return l
}

// count is the number of records of minute m given its hour's lambda:
// floor(lambda + u) with u uniform from a hash, so its mean is lambda.
func (st *stream) count(m int64, lam float64) int64 {
	return int64(lam + unit(mix64(st.key^uint64(m)*saltMin)))
}

// minuteBase is the part of a record key shared by all records of minute m.
func (st *stream) minuteBase(m int64) uint64 { return mix64(st.key ^ uint64(m)*saltRec) }

// recKey identifies record i of a minute; every field derives from it.
func recKey(base uint64, i uint32) uint64 { return mix64(base + uint64(i+1)*golden) }

// recTime is the record time in Unix milliseconds: inside minute m.
func recTime(m int64, key uint64) int64 { return m*60000 + int64(key%60000) }

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

// minuteLimit is the longest window (in minutes) whose plan keeps a
// per-minute prefix; longer windows keep one per hour and rescan the hour.
const minuteLimit = 1 << 16

// plan indexes the records of a stream with time in [start, end): index r in
// [0, n) maps to (minute, i) in time-minute order. Its memory is bounded by
// the window's minutes (or hours), never by its rows.
type plan struct {
	st         *stream
	start, end int64 // ms
	m0, m1     int64 // minutes [m0, m1)
	n          int64
	// mpre[k] counts records in minutes m0 .. m0+k-1 (minute mode), or
	// hpre[k] in hours h0 .. h0+k-1 clipped to the window (hour mode).
	mpre []int64
	h0   int64
	hpre []int64
	// first lists the i of minute m0 inside the window when m0 is cut by the
	// window's bounds; last does the same for minute m1-1 (when != m0).
	first, last   []uint32
	cutFirst      bool
	cutLast       bool
	lamHour       int64
	lamVal        float64
	lamCacheValid bool
}

func newPlan(st *stream, start, end int64) *plan {
	p := &plan{st: st, start: start, end: end}
	if end <= start {
		return p
	}
	p.m0 = floorDiv(start, 60000)
	p.m1 = floorDiv(end-1, 60000) + 1
	single := p.m1-p.m0 == 1
	if start%60000 != 0 || (single && end%60000 != 0) {
		p.cutFirst = true
		p.first = p.inside(p.m0, nil)
	}
	if !single && end%60000 != 0 {
		p.cutLast = true
		p.last = p.inside(p.m1-1, nil)
	}
	if p.m1-p.m0 <= minuteLimit {
		p.mpre = make([]int64, p.m1-p.m0+1)
		var sum int64
		h := int64(math.MinInt64)
		var lam float64
		for m := p.m0; m < p.m1; m++ {
			if mh := floorDiv(m, 60); mh != h {
				h, lam = mh, st.lambda(mh)
			}
			sum += p.cnt(m, lam)
			p.mpre[m-p.m0+1] = sum
		}
		p.n = sum
		return p
	}
	p.h0 = floorDiv(p.m0, 60)
	h1 := floorDiv(p.m1-1, 60) + 1
	p.hpre = make([]int64, h1-p.h0+1)
	var sum int64
	for h := p.h0; h < h1; h++ {
		lam := st.lambda(h)
		for m := max(h*60, p.m0); m < min(h*60+60, p.m1); m++ {
			sum += p.cnt(m, lam)
		}
		p.hpre[h-p.h0+1] = sum
	}
	p.n = sum
	return p
}

// inside appends to dst the indexes of minute m's records whose time is in
// the window.
func (p *plan) inside(m int64, dst []uint32) []uint32 {
	c := p.st.count(m, p.st.lambda(floorDiv(m, 60)))
	base := p.st.minuteBase(m)
	for i := uint32(0); int64(i) < c; i++ {
		if t := recTime(m, recKey(base, i)); t >= p.start && t < p.end {
			dst = append(dst, i)
		}
	}
	return dst
}

// cnt is the number of minute m's records inside the window.
func (p *plan) cnt(m int64, lam float64) int64 {
	switch {
	case m == p.m0 && p.cutFirst:
		return int64(len(p.first))
	case m == p.m1-1 && p.cutLast:
		return int64(len(p.last))
	}
	return p.st.count(m, lam)
}

func (p *plan) lam(h int64) float64 {
	if !p.lamCacheValid || p.lamHour != h {
		p.lamHour, p.lamVal, p.lamCacheValid = h, p.st.lambda(h), true
	}
	return p.lamVal
}

// idx maps the local index of a record among minute m's records inside the
// window to its index i within the minute.
func (p *plan) idx(m, local int64) uint32 {
	switch {
	case m == p.m0 && p.cutFirst:
		return p.first[local]
	case m == p.m1-1 && p.cutLast:
		return p.last[local]
	}
	return uint32(local)
}

// locate maps r in [0, n) to its minute and index in the minute. A plan is
// not safe for concurrent use by locate (it caches one hour's lambda).
func (p *plan) locate(r int64) (m int64, i uint32) {
	if p.mpre != nil {
		k := upper(p.mpre, r)
		return p.m0 + k, p.idx(p.m0+k, r-p.mpre[k])
	}
	k := upper(p.hpre, r)
	h := p.h0 + k
	local := r - p.hpre[k]
	lam := p.lam(h)
	for m = max(h*60, p.m0); ; m++ {
		c := p.cnt(m, lam)
		if local < c {
			return m, p.idx(m, local)
		}
		local -= c
	}
}

// upper returns the k with pre[k] <= r < pre[k+1] (pre is non-decreasing,
// pre[0] = 0 <= r < pre[len-1]).
func upper(pre []int64, r int64) int64 {
	lo, hi := 0, len(pre)-1 // pre[lo] <= r < pre[hi]
	for hi-lo > 1 {
		mid := int(uint(lo+hi) >> 1)
		if pre[mid] <= r {
			lo = mid
		} else {
			hi = mid
		}
	}
	return int64(lo)
}

// each calls fn for every record of minutes [from, to) inside the window, in
// natural order, until fn returns false. It is safe for concurrent use on
// disjoint minute ranges.
func (p *plan) each(from, to int64, fn func(m int64, i uint32, key uint64, t int64) bool) bool {
	h := int64(math.MinInt64)
	var lam float64
	for m := max(from, p.m0); m < min(to, p.m1); m++ {
		if mh := floorDiv(m, 60); mh != h {
			h, lam = mh, p.st.lambda(mh)
		}
		c := p.cnt(m, lam)
		base := p.st.minuteBase(m)
		for local := int64(0); local < c; local++ {
			i := p.idx(m, local)
			key := recKey(base, i)
			if !fn(m, i, key, recTime(m, key)) {
				return false
			}
		}
	}
	return true
}
