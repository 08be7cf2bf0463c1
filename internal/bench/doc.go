// Package bench holds the collector's end-to-end benchmarks: throughput of
// the record path, how well a backfill spends the rate budget, and the
// memory of a large backlog. It has no code of its own; everything is in
// the _test.go files. Speed is never asserted: the benchmarks report
// figures (b.ReportMetric) and fail only when the run itself is wrong
// (rows missing against the simulator's /_truth, a replay that does not
// match its recording, a 429 in the budgeted run).
//
// The benchmarks that drive the collector binary do it with the harness the
// end-to-end tests use (internal/testinfra/harness), which builds the
// binary when a benchmark first asks for it (a plain `go test` of this
// package builds nothing): they start the project's API simulator
// (internal/apisim) in the test process on loopback, write a
// configuration file, pass the credentials in the environment as
// production does, and run `collector run --once`. The collector's CPU
// time is that process's alone (wait4 rusage:
// ProcessState.UserTime+SystemTime), so the simulator's work is not
// counted. Its peak RSS is VmHWM read from /proc/PID/status every 200 ms
// while it runs, not wait4's ru_maxrss: on Linux a child's ru_maxrss is at
// least its parent's peak RSS at the time of the exec (the kernel folds the
// old mm's high-water mark into the child's at exec), so a benchmark
// process that holds a large corpus reports that corpus as the collector's
// peak. BenchmarkMemory logs both.
//
// # Benchmarks
//
// BenchmarkPipeline: records per second, and per CPU-second ("per core"),
// from page bytes to the file sink, in process. The simulator's answers for
// a backfill (all nine sources of two accounts, 3 hours at the simulator's
// default production-shaped rates, about 470,000 rows) are recorded once,
// with the collector's clock and the simulator's stopped at one instant so
// that every run plans the same windows and sends the same requests; then
// an http.RoundTripper serves them from memory. Sub-benchmarks:
//
//   - inprocess/fsync=true|false: the path as internal/app assembles it:
//     source.Build (client, budget, pollers: page parsing and C7 envelopes
//     with RFC 8785 ids) -> pipeline (bounded buffer, 4 sink workers,
//     ordered acks, bbolt checkpoint) -> file sink.
//   - stage=fetch+parse+id: the pollers alone, pages discarded.
//   - stage=id: record.Builder over the raw records (canonical JSON,
//     SHA-256, record time), one goroutine.
//   - stage=file/fsync=true|false: the file sink writing the same batches,
//     one at a time.
//
// CPU is this process's getrusage delta around each run; the recording is
// done before the timer starts.
//
// BenchmarkPipelineBinary/fsync=true|false: the binary on a fixed backlog
// (nine sources, two accounts, the last 6 hours at default rates, about
// 1.1 million rows, a budget too large to wait), into the file sink.
// Reports rows/s (wall, exec to exit), rows/cpu-s and cpu-s/Mrows of the
// collector process, and its peak RSS (VmHWM).
//
// BenchmarkBudget: a 24-hour backfill of nine sources and two accounts
// against a simulator limited to 60 requests per 5 s per (user,
// functionality), 500-row pages, the collector told the same rate (api.rate
// and edge.rate; reserve 10 %). Reports requests over their lower bound
// (req/lb: sum over streams of max(1, ceil(rows/P)) plus one token
// request, P = 500 for core sources and edge.max_rows = 10,000 for edge
// sources; req/lb-win: the same bound over the windows the collector
// actually used, plus one per empty answer), wall time over the least the
// budget allows (wall/min: max over buckets of (n - L(1-reserve)) /
// (L/period (1-reserve)); wall/min-noreserve: the same with reserve 0), and
// the 429s (must be 0). BenchmarkBudget's comment defines each bound; the
// log lists every bucket.
//
// BenchmarkMemory/rows=1M and rows=10M: peak RSS (VmHWM) of the binary for a backlog
// of about 1 and about 10 million rows (dns and connections of one
// account, 1 day or 10 days back, no bursts, generous budget), file sink
// with fsync off into a temporary directory (removed after the run),
// pipeline.buffer_records at its default. It also samples VmRSS every
// 200 ms and the Go memory gauges of /metrics every second, and logs the
// largest sample of each tenth of the run, so that growth with the backlog
// would show as a trend. rows=10M runs only with -long.
//
// BenchmarkMemoryStreams/accounts=1|4|8: peak RSS (VmHWM) of the binary
// against the number of streams (the seven core sources of 1, 4 and 8
// accounts: 7, 28 and 56 pollers) at the same backlog per stream (four full
// pages each), buffer_records at its default: what the buffer does not
// bound (each poller's page in hand and the page it prefetched).
//
// BenchmarkSinkMemory/sink=file|kafka|clickhouse: peak RSS (VmHWM) and
// rows/s of the binary backfilling 2 days of all nine sources of three
// accounts (about 2.5 million records at -scale 1: the simulator's
// production-shaped rates times 0.22 times -scale) into each sink with the
// collector's defaults: the file sink into a temporary directory, Kafka
// into a cmd/kafkabroker started with --blackhole (acknowledges without
// keeping the records), ClickHouse into a fresh database of the chtest
// server (native). $BENCH_COLLECTOR_ENV adds environment to the collector
// (e.g. COLLECTOR_PIPELINE__BUFFER_RECORDS=20000) to measure other
// settings; the "Memory" table of docs/performance.md comes from it. -scale defaults
// to 0.1 (1 with -long).
//
// # Running
//
// Everything but the 10-million-row case (about 2.5 minutes on 2 cores):
//
//	go test -run '^$' -bench . ./internal/bench/
//
// One benchmark, once, with its log lines:
//
//	go test -run '^$' -bench BenchmarkBudget -benchtime 1x -v ./internal/bench/
//
// The memory of a full-scale backfill per sink (about 2-5 minutes a sink
// on 2 cores; ClickHouse needs CHDB_LIB or a running server, see
// internal/testinfra/chtest):
//
//	go test -run '^$' -bench SinkMemory -benchtime 1x -v -timeout 1h ./internal/bench/ -args -scale 1
//
// The long one (10 million rows, about 2-3 minutes on 2 cores; it writes
// about 5 GB into the temporary directory and removes it):
//
//	go test -run '^$' -bench 'Memory/rows=10M' -benchtime 1x -v -timeout 2h ./internal/bench/ -args -long
//
// Each run takes seconds, so -benchtime 1x is the natural setting; larger
// -benchtime values repeat whole runs. Figures depend on the machine's load:
// note `uptime` with them (every benchmark reports load1, the 1-minute load
// average at its end). Profiles: add -cpuprofile to a BenchmarkPipeline run
// (the in-process path is in the test binary; the recording pass is in the
// profile too).
package bench
