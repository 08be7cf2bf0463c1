package status

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/record"
)

// lastCommitDesc is collector_stream_last_commit_timestamp_seconds, with
// the label tenant before source and account for streams of tenants.
func lastCommitDesc(tenanted bool) *prometheus.Desc {
	return prometheus.NewDesc("collector_stream_last_commit_timestamp_seconds",
		"When the stream's checkpoint state last moved (Unix seconds): a page of it acknowledged by every sink, committed within "+
			"a second unless collector_checkpoint_commit_errors_total rises; kept across restarts by the checkpoint. 0 while the "+
			"stream has never committed anything: a stream that fails before its first commit shows 0 here and its poll errors rising.",
		streamLabels(tenanted), nil)
}

// streamLabels are the label names of a stream's series: tenant (for
// streams of tenants: docs/tenants.md), source, account. A collector of
// one tenant has no tenant label: its series are those of before tenants.
func streamLabels(tenanted bool) []string {
	if tenanted {
		return []string{"tenant", "source", "account"}
	}
	return []string{"source", "account"}
}

// lv returns the label values of stream k's series (streamLabels).
func (p *Reporter) lv(k record.Stream) []string {
	if p.tenanted {
		return []string{k.TenantName(), k.Source, k.Account}
	}
	return []string{k.Source, k.Account}
}

// commitCollector exports every configured stream's last commit time,
// read from the acknowledged states when scraped, so that a stream that
// never committed has its series (at 0) from the start.
type commitCollector struct{ p *Reporter }

// Describe implements prometheus.Collector.
func (c commitCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.p.lastCommit }

// Collect implements prometheus.Collector.
func (c commitCollector) Collect(ch chan<- prometheus.Metric) {
	acked := c.p.acked.States()
	for _, pl := range c.p.current() {
		k := pl.Stream()
		v := 0.0
		if u := acked[k].Updated; !u.IsZero() {
			v = float64(u.UnixMilli()) / 1e3
		}
		ch <- prometheus.MustNewConstMetric(c.p.lastCommit, prometheus.GaugeValue, v, c.p.lv(k)...)
	}
}
