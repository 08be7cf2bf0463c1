// Package pollmetrics holds the pollers' Prometheus metrics (rows, pages,
// splits, restarts, flawed records, poll errors, the paging limits learnt,
// blocked streams), registered on the Registerer it is given. Package
// source re-exports its Metrics and New as source.Metrics and
// source.NewMetrics; the pollers are its only writers.
//
// It owns the metric families and their label sets only: it makes no
// request and knows no poller, sink or checkpoint.
package pollmetrics
