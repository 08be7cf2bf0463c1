package apisim

// Everything the simulator generates is a pure function of 64-bit hashes of
// (seed, stream, minute, index): no state, so any page or window can be
// produced on its own.

const (
	golden        = 0x9e3779b97f4a7c15
	saltMin       = 0x5851f42d4c957f2d // minute counts
	saltRec       = 0x14057b7ef767814f // record keys
	saltHour      = 0x2545f4914f6cdd1d // bursts
	saltLate      = 0x6a09e667f3bcc909 // ingestion delay
	saltLateShare = 0xa54ff53a5f1d36f1 // whether a record is late at all
	saltPerm      = 0xbb67ae8584caa73b // window permutation
	saltUpd       = 0x3c6ef372fe94f82b // alert updates
)

// mix64 is the splitmix64 finalizer: a fast bijective 64-bit mixer.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// hashString is FNV-1a followed by mix64.
func hashString(seed uint64, s string) uint64 {
	h := uint64(0xcbf29ce484222325) ^ seed
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 0x100000001b3
	}
	return mix64(h)
}

// unit maps a hash to [0, 1).
func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }

// rnd is a splitmix64 stream seeded from a record key: the successive values
// fill a record's fields.
type rnd struct{ s uint64 }

func (r *rnd) next() uint64 {
	r.s += golden
	return mix64(r.s)
}

// n returns a value in [0, k).
func (r *rnd) n(k int) int { return int(r.next() % uint64(k)) }
