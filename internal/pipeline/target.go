package pipeline

import (
	"hash/fnv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
)

// Target is one destination of the pipeline: a sink and the name it was
// configured under (the sink label of the pipeline's per-sink metrics, and
// how errors and lags name it). Every page goes to every target.
type Target struct {
	Name string
	Sink sink.Sink
}

// target is a Target at work: the queues of its own sink workers (for a
// sink.InOrder sink one each, a stream's pages always going to the same
// worker, so the sink gets a stream's batches one at a time and in order;
// for others one queue all workers share),
// their last write error, and the pages handed to it that it has not
// finished with yet (its lag).
type target struct {
	Target
	queues          []chan *item
	workersPerQueue int
	ledger          sink.Ledger  // nil when the sink is no Ledger
	writeE          atomic.Value // errBox: the last failed Write since the last success
	batchDuration   prometheus.Observer
	suppressed      *prometheus.CounterVec                  // [tenant,] source, account: records left out: the sink holds them
	lv              func(record.Stream, ...string) []string // the label values of suppressed (metrics.lv)

	// held counts, per stream, the records the sink holds beyond the
	// checkpoint by their id hash (ledger.go): they are not written to it
	// again. Loaded before the workers start; heldLeft is the sum, read
	// without the lock when it is 0 (mostly: a sink holds nothing past
	// its mark).
	heldMu   sync.Mutex
	held     map[record.Stream]map[uint64]int
	heldLeft atomic.Int64

	mu      sync.Mutex
	pending map[*item]struct{} // handed to this sink, not yet acknowledged or dropped by it
	records int64              // records of pending
}

func newTarget(t Target, m *metrics, workers int) *target {
	tg := &target{Target: t, pending: map[*item]struct{}{}, batchDuration: m.batchDuration.WithLabelValues(t.Name),
		suppressed: m.sinkSuppressed.MustCurryWith(prometheus.Labels{"sink": t.Name}), lv: m.lv}
	tg.ledger, _ = t.Sink.(sink.Ledger)
	if o, ok := t.Sink.(sink.InOrder); ok && o.InOrder() {
		// One queue a worker; a stream always goes to the same one.
		for range workers {
			tg.queues = append(tg.queues, make(chan *item, queueItems))
		}
		tg.workersPerQueue = 1
	} else {
		tg.queues = []chan *item{make(chan *item, queueItems)}
		tg.workersPerQueue = workers
	}
	return tg
}

// queue is the queue of the worker that writes stream k's pages.
func (t *target) queue(k record.Stream) chan *item {
	h := fnv.New32a()
	h.Write([]byte(k.Source))
	h.Write([]byte{0})
	h.Write([]byte(k.Account))
	return t.queues[int(h.Sum32()%uint32(len(t.queues)))]
}

// delivery is the sink's delivery mode (sink.Ledger.Delivery).
func (t *target) delivery() string {
	if t.ledger == nil {
		return sink.DeliveryAtLeastOnce
	}
	return t.ledger.Delivery()
}

// queueItems bounds each queue of a sink's workers in pages. Pages
// holding records are bounded by pipeline.buffer_records already; this
// bounds the empty ones.
const queueItems = 1024

// hand counts it as pending for t, before it enters t's queue.
func (t *target) hand(it *item) {
	t.mu.Lock()
	t.pending[it] = struct{}{}
	t.records += int64(it.records())
	t.mu.Unlock()
}

// done forgets it: t acknowledged or dropped it.
func (t *target) done(it *item) {
	t.mu.Lock()
	if _, ok := t.pending[it]; ok {
		delete(t.pending, it)
		t.records -= int64(it.records())
	}
	t.mu.Unlock()
}

// SinkLag is how far one sink is behind the pages handed to it: the pages
// it has not acknowledged yet, waiting in its queue or being written. A
// page holds its room in the buffer until every sink acknowledged it, so a
// sink that lags holds the others back; this says which one.
type SinkLag struct {
	// Sink is the sink's configured name.
	Sink string
	// Records and Pages count what waits for the sink.
	Records int64
	Pages   int
	// Oldest is how long the oldest of those pages has waited since it
	// was handed on (Emit); 0 when none waits.
	Oldest time.Duration
	// Delivery is the sink's delivery mode: sink.DeliveryExactlyOnce or
	// sink.DeliveryAtLeastOnce.
	Delivery string
}

// lag returns t's lag at now.
func (t *target) lag(now time.Time) SinkLag {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := SinkLag{Sink: t.Name, Records: t.records, Pages: len(t.pending), Delivery: t.delivery()}
	for it := range t.pending {
		l.Oldest = max(l.Oldest, now.Sub(it.handed))
	}
	return l
}

// streamLag adds t's lag per stream into out[k][i].
func (t *target) streamLag(now time.Time, i int, out map[record.Stream][]SinkLag) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for it := range t.pending {
		ls := out[it.key]
		if ls == nil {
			continue
		}
		ls[i].Records += int64(it.records())
		ls[i].Pages++
		ls[i].Oldest = max(ls[i].Oldest, now.Sub(it.handed))
	}
}
