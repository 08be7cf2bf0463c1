package clickhouse

import (
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/clickhouse/schema"
)

// chunk is the rows of one Write call in columns, ready to be appended to an
// insert. It is built by the Write goroutine (extraction runs in parallel
// across writers) and read by the table's insert loop; nobody changes it
// after build.
type chunk struct {
	rows  int
	bytes int // uncompressed estimate: metrics, and batch_bytes
	// cum[i] is the estimated bytes of rows [0, i) (len rows+1), so that
	// an insert can take a run of rows within batch_bytes.
	cum []int

	ids      []string
	accounts []string
	millis   [4][]int64 // time, window_start, window_end, fetched_at as epoch ms
	records  [][]byte
	original []*string  // nil but for a record received with a flaw
	strs     [][]string // typed columns by slot
	ints     [][]int64
	times    [][]int64       // epoch ms
	ips      [][]*netip.Addr // nil: NULL
	uint8s   [][]*uint8      // nil: NULL
	// ipVals and uint8Vals back the pointers of ips and uint8s: one
	// allocation a column instead of one a value.
	ipVals    [][]netip.Addr
	uint8Vals [][]uint8

	layout *layout
	row    int // the row extraction is filling
	// tenant is the tenant column of every row: the batch's (one stream,
	// one tenant; "" in the one-tenant form).
	tenant string
	// batch is the _batch value of every row (delivery exactly_once,
	// ledger.go), "" when the table has no such column.
	batch string

	arrived time.Time
	done    chan error // buffered 1: the insert's outcome

	// next is the first row no insert took yet (the table writer's mu).
	next int
	// landed counts the rows whose inserts succeeded; failed is set once
	// an insert of its rows failed for good for this Write. Only the
	// table's insert loop touches them.
	landed int
	failed bool
}

// part is the rows [lo, hi) of a chunk: what one insert takes of it. An
// insert takes whole chunks, but a chunk larger than batch_rows or
// batch_bytes goes in parts, one insert after the other.
type part struct {
	c      *chunk
	lo, hi int
}

func (p part) rows() int  { return p.hi - p.lo }
func (p part) bytes() int { return p.c.cum[p.hi] - p.c.cum[p.lo] }

// cut returns the end of the longest run of rows from lo within rows
// rows and maxBytes bytes; at least one row, however large.
func (c *chunk) cut(lo, rows, maxBytes int) int {
	hi := lo + 1
	for hi < c.rows && hi-lo < rows && c.cum[hi+1]-c.cum[lo] <= maxBytes {
		hi++
	}
	return hi
}

// layout maps a table's typed fields to the slices of a chunk.
type layout struct {
	table schema.Table
	ext   *extractor
	slot  []int // field -> index in strs, ints or times
	nStr  int
	nInt  int
	nTime int
	nIP   int
	nU8   int
}

func newLayout(t schema.Table) *layout {
	l := &layout{table: t, ext: newExtractor(t.Fields), slot: make([]int, len(t.Fields))}
	for i, f := range t.Fields {
		switch f.Kind {
		case schema.KindString:
			l.slot[i], l.nStr = l.nStr, l.nStr+1
		case schema.KindInt64:
			l.slot[i], l.nInt = l.nInt, l.nInt+1
		case schema.KindTime:
			l.slot[i], l.nTime = l.nTime, l.nTime+1
		case schema.KindIP:
			l.slot[i], l.nIP = l.nIP, l.nIP+1
		case schema.KindUInt8:
			l.slot[i], l.nU8 = l.nU8, l.nU8+1
		}
	}
	return l
}

// newChunk converts the envelopes of b, in order.
func (l *layout) newChunk(b *record.Batch) *chunk {
	n := len(b.Envelopes)
	c := &chunk{rows: n, layout: l, tenant: b.Tenant, done: make(chan error, 1)}
	c.ids = make([]string, n)
	c.accounts = make([]string, n)
	for i := range c.millis {
		c.millis[i] = make([]int64, n)
	}
	c.records = make([][]byte, n)
	c.original = make([]*string, n)
	c.strs = columns[string](l.nStr, n)
	c.ints = columns[int64](l.nInt, n)
	c.times = columns[int64](l.nTime, n)   // 0: 1970-01-01, the default
	c.ips = columns[*netip.Addr](l.nIP, n) // nil: NULL, the default
	c.ipVals = columns[netip.Addr](l.nIP, n)
	c.uint8s = columns[*uint8](l.nU8, n)
	c.uint8Vals = columns[uint8](l.nU8, n)
	c.cum = make([]int, n+1)
	fixed := 4*8 + 8*(l.nInt+l.nTime) + 16*l.nIP + l.nU8
	size := 0
	for i := range b.Envelopes {
		e := &b.Envelopes[i]
		c.ids[i] = e.ID
		c.accounts[i] = e.Account
		c.millis[0][i] = clampTime(e.Time).UnixMilli()
		c.millis[1][i] = clampTime(e.WindowStart).UnixMilli()
		c.millis[2][i] = clampTime(e.WindowEnd).UnixMilli()
		c.millis[3][i] = clampTime(e.FetchedAt).UnixMilli()
		c.records[i] = e.Record
		if e.Original != nil {
			o := string(e.Original)
			c.original[i] = &o
			size += len(o)
		}
		c.row = i
		l.ext.extract(e.Record, c)
		size += len(e.ID) + len(e.Account) + len(e.Record) + fixed
		for _, col := range c.strs {
			size += len(col[i])
		}
		c.cum[i+1] = size
	}
	c.bytes = size
	return c
}

// columns makes k columns of n zero values.
func columns[T any](k, n int) [][]T {
	cols := make([][]T, k)
	for i := range cols {
		cols[i] = make([]T, n)
	}
	return cols
}

func (c *chunk) setString(f int, v string)  { c.strs[c.layout.slot[f]][c.row] = v }
func (c *chunk) setInt(f int, v int64)      { c.ints[c.layout.slot[f]][c.row] = v }
func (c *chunk) setTime(f int, v time.Time) { c.times[c.layout.slot[f]][c.row] = v.UnixMilli() }

func (c *chunk) setIP(f int, v netip.Addr) {
	s := c.layout.slot[f]
	c.ipVals[s][c.row] = v
	c.ips[s][c.row] = &c.ipVals[s][c.row]
}

func (c *chunk) setUInt8(f int, v uint8) {
	s := c.layout.slot[f]
	c.uint8Vals[s][c.row] = v
	c.uint8s[s][c.row] = &c.uint8Vals[s][c.row]
}

// column returns the values of column i (in schema.Table.Columns order) of
// the part's rows as the slice the driver's column Append takes.
func (p part) column(i int) any {
	c, lo, hi := p.c, p.lo, p.hi
	switch i {
	case schema.ColID:
		return c.ids[lo:hi]
	case schema.ColAccount:
		return c.accounts[lo:hi]
	case schema.ColTime:
		return c.millis[0][lo:hi]
	case schema.ColWindowStart:
		return c.millis[1][lo:hi]
	case schema.ColWindowEnd:
		return c.millis[2][lo:hi]
	case schema.ColFetchedAt:
		return c.millis[3][lo:hi]
	case schema.ColRecord:
		return c.records[lo:hi]
	case schema.ColOriginal:
		return c.original[lo:hi]
	case schema.ColTenant:
		col := make([]string, hi-lo)
		for j := range col {
			col[j] = c.tenant
		}
		return col
	}
	f := i - schema.NumCommon
	if f == len(c.layout.table.Fields) {
		col := make([]string, hi-lo)
		for j := range col {
			col[j] = c.batch
		}
		return col
	}
	s := c.layout.slot[f]
	switch c.layout.table.Fields[f].Kind {
	case schema.KindString:
		return c.strs[s][lo:hi]
	case schema.KindInt64:
		return c.ints[s][lo:hi]
	case schema.KindIP:
		return c.ips[s][lo:hi]
	case schema.KindUInt8:
		return c.uint8s[s][lo:hi]
	default:
		return c.times[s][lo:hi]
	}
}

// dedupToken is the insert_deduplication_token of an insert of parts: the
// SHA-256 of the table name and the ids in order, each part's ids after
// its tenant when it has one (two tenants' byte-identical records have the
// same ids, and an insert of one tenant's must not pass for a repeat of
// the other's: issue 32). A repeat of the same insert has the same token
// and ClickHouse stores it once; any other content has another token.
func dedupToken(table string, parts []part) string {
	h := sha256.New()
	buf := make([]byte, 0, 8192)
	buf = append(append(buf, table...), '\n')
	for _, p := range parts {
		if p.c.tenant != "" {
			h.Write(buf)
			buf = append(append(append(buf[:0], "tenant "...), p.c.tenant...), '\n')
		}
		for _, id := range p.c.ids[p.lo:p.hi] {
			if len(buf)+len(id)+1 > cap(buf) {
				h.Write(buf)
				buf = buf[:0]
			}
			buf = append(append(buf, id...), '\n')
		}
	}
	h.Write(buf)
	return hex.EncodeToString(h.Sum(nil))
}
