package harness

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
)

// Tail returns the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// CountLogs counts the JSON log lines of logs whose msg is msg.
func CountLogs(logs, msg string) int {
	n := 0
	for _, line := range strings.Split(logs, "\n") {
		var l struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == msg {
			n++
		}
	}
	return n
}

// DoneRows returns rows_delivered of the collector's final "done" log line;
// logs without one fail tb.
func DoneRows(tb testing.TB, logs string) int64 {
	tb.Helper()
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l struct {
			Msg  string `json:"msg"`
			Rows *int64 `json:"rows_delivered"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "done" && l.Rows != nil {
			return *l.Rows
		}
	}
	tb.Fatalf("no final \"done\" line with rows_delivered in the collector's logs:\n%s", Tail(logs, 20))
	return 0
}
