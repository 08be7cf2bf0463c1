// Package telemetry serves the collector's own health: /metrics (Prometheus
// text from a Registry it is given), /healthz (liveness) and /readyz
// (readiness: every registered check passes). It owns no metrics of the data
// path; each package builds its own from the Registerer it is handed.
package telemetry
