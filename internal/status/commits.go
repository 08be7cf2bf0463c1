package status

import (
	"github.com/prometheus/client_golang/prometheus"
)

// lastCommitDesc is collector_stream_last_commit_timestamp_seconds.
var lastCommitDesc = prometheus.NewDesc("collector_stream_last_commit_timestamp_seconds",
	"When the stream's checkpoint state last moved (Unix seconds): a page of it acknowledged by every sink, committed within "+
		"a second unless collector_checkpoint_commit_errors_total rises; kept across restarts by the checkpoint. 0 while the "+
		"stream has never committed anything: a stream that fails before its first commit shows 0 here and its poll errors rising.",
	[]string{"source", "account"}, nil)

// commitCollector exports every configured stream's last commit time,
// read from the acknowledged states when scraped, so that a stream that
// never committed has its series (at 0) from the start.
type commitCollector struct{ p *Reporter }

// Describe implements prometheus.Collector.
func (c commitCollector) Describe(ch chan<- *prometheus.Desc) { ch <- lastCommitDesc }

// Collect implements prometheus.Collector.
func (c commitCollector) Collect(ch chan<- prometheus.Metric) {
	acked := c.p.acked.States()
	for _, pl := range c.p.current() {
		k := pl.Stream()
		v := 0.0
		if u := acked[k].Updated; !u.IsZero() {
			v = float64(u.UnixMilli()) / 1e3
		}
		ch <- prometheus.MustNewConstMetric(lastCommitDesc, prometheus.GaugeValue, v, k.Source, k.Account)
	}
}
