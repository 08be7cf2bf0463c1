// Package status says where every stream stands: its watermark, lag,
// window in flight, rows delivered, the backlog left and an estimated time
// to catch up. It serves a running collector (Reporter: the progress log
// line with percent and ETA, the backlog gauges and every stream's last
// commit time (collector_stream_last_commit_timestamp_seconds, 0: never),
// the /state endpoint (StartingHandler while the collector starts, from
// the checkpoint) and, on a terminal, the live progress bars of Bars,
// drawn with
// github.com/vbauerster/mpb) and the state command (FromCheckpoint, Live,
// Print, and Watch for --watch).
//
// It owns only that reporting. It reads the pollers' snapshots, the
// pipeline's acknowledged states (through Acked) and the checkpoint's
// stored states; it changes none of them, starts nothing but its own
// ticker (and the display's goroutines, which Close ends), and never talks
// to the API or a sink.
package status
