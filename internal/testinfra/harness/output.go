package harness

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/record"
)

// Envelope is one delivered record as the file and stdout sinks write it
// (CONTRACT C7), decoded. The window's bounds stay as written (RFC 3339
// UTC with milliseconds): they serve as keys, and parsing them would slow
// a race-instrumented read of a large output.
type Envelope struct {
	ID string `json:"id"`
	// Tenant is the envelope's tenant, "" in the one-tenant form.
	Tenant      string    `json:"tenant"`
	Source      string    `json:"source"`
	Account     string    `json:"account"`
	Time        time.Time `json:"time"`
	WindowStart string    `json:"window_start"`
	WindowEnd   string    `json:"window_end"`
	FetchedAt   time.Time `json:"fetched_at"`
	// Snapshot marks an inventory walk's record (record.Envelope.Snapshot).
	Snapshot bool            `json:"snapshot"`
	Record   json.RawMessage `json:"record"`
}

// record.Stream is the envelope's (source, account).
func (e *Envelope) Stream() record.Stream { return record.Stream{Source: e.Source, Account: e.Account} }

// EachEnvelope calls fn for every envelope of every NDJSON file (plain,
// gzip, in progress) under dir, in no particular order; line is the
// envelope's bytes, valid during the call. A line that is no envelope fails
// tb.
func EachEnvelope(tb testing.TB, dir string, fn func(e *Envelope, line []byte)) {
	tb.Helper()
	err := eachLine(dir, func(path string, line []byte) error {
		var e Envelope
		if err := json.Unmarshal(line, &e); err != nil {
			return fmt.Errorf("%s: envelope %q: %w", path, line, err)
		}
		fn(&e, line)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// eachLine calls fn with every non-blank line of every NDJSON file (plain,
// gzip, in progress: *.ndjson, *.ndjson.gz, *.ndjson.part, *.ndjson.gz.part)
// under dir, at any depth (sink.file.path may partition by time), and the
// file's path; line is valid during the call. The first error ends it.
func eachLine(dir string, fn func(path string, line []byte) error) error {
	return filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && path != dir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir // the sink's own (.pruned: what retention deleted)
		}
		if err != nil || d.IsDir() || !strings.Contains(d.Name(), ".ndjson") {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		var r io.Reader = f
		if strings.Contains(d.Name(), ".gz") {
			zr, err := gzip.NewReader(f)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			r = zr
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			if line := sc.Bytes(); len(bytes.TrimSpace(line)) > 0 {
				if err := fn(path, line); err != nil {
					return err
				}
			}
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	})
}

// Output is what a sink delivered: per stream, every id with how often it
// came, and the record time of each id. The zero Output is not usable; use
// NewOutput. Not safe for concurrent use.
type Output struct {
	IDs   map[record.Stream]map[string]int
	Times map[string]time.Time
	Total int // deliveries, repeats included
	// Snapshots counts the inventory walks' records (agent_info's current
	// agents), which are in no window the truth counts and not in IDs.
	Snapshots int
}

// NewOutput returns an empty Output.
func NewOutput() *Output {
	return &Output{IDs: map[record.Stream]map[string]int{}, Times: map[string]time.Time{}}
}

// Add counts one delivery of id, a record of stream k with time t. The
// caller has checked that id is the record's C7 id.
func (o *Output) Add(k record.Stream, id string, t time.Time) {
	if o.IDs[k] == nil {
		o.IDs[k] = map[string]int{}
	}
	o.IDs[k][id]++
	o.Times[id] = t
	o.Total++
}

// AddRecord is Add for a record whose fields come decoded (a Kafka record's
// key and headers): it checks that id is the C7 id of raw and that recTime
// is RFC 3339, and fails tb otherwise.
func (o *Output) AddRecord(tb testing.TB, id, source, account, recTime string, raw []byte) {
	tb.Helper()
	if got, err := record.ID(source, raw); err != nil || got != id {
		tb.Fatalf("id %s is not the C7 id of its record (%s, %v): %.300s", id, got, err, raw)
	}
	tm, err := time.Parse(time.RFC3339Nano, recTime)
	if err != nil {
		tb.Fatalf("record %s: time %q: %v", id, recTime, err)
	}
	o.Add(record.Stream{Source: source, Account: account}, id, tm)
}

// Of returns how often each id of stream k came. For an edge stream as
// the collector's checkpoint and /state name it (source, EdgeAccount) it
// is every envelope account's ids of that source together (C6).
func (o *Output) Of(k record.Stream) map[string]int {
	if !IsEdge(k.Source) || k.Account != EdgeAccount {
		return o.IDs[k]
	}
	out := map[string]int{}
	for s, ids := range o.IDs {
		if s.Source != k.Source {
			continue
		}
		for id, n := range ids {
			out[id] += n
		}
	}
	return out
}

// Duplicates counts deliveries beyond the first of every id.
func (o *Output) Duplicates() int {
	n := 0
	for _, m := range o.IDs {
		for _, c := range m {
			n += c - 1
		}
	}
	return n
}

// ReadFileSink reads what the file sink wrote under dir (EachEnvelope)
// and checks that every envelope's id is the C7 id of its record.
func ReadFileSink(tb testing.TB, dir string) *Output {
	tb.Helper()
	out := NewOutput()
	EachEnvelope(tb, dir, func(e *Envelope, line []byte) {
		if id, err := record.ID(e.Source, e.Record); err != nil || id != e.ID {
			tb.Fatalf("envelope id %s is not the C7 id of its record (%s, %v)", e.ID, id, err)
		}
		if e.Snapshot {
			out.Snapshots++ // an agent's state, in no window the truth counts
			return
		}
		out.Add(e.Stream(), e.ID, e.Time)
	})
	return out
}

// ReadOutput is ReadFileSink of the collector's OutDir.
func (c *Collector) ReadOutput(tb testing.TB) *Output {
	tb.Helper()
	return ReadFileSink(tb, c.OutDir())
}

// CountLines counts the newline-terminated lines of every file under dir,
// without decoding them: the deliveries of a large run.
func CountLines(tb testing.TB, dir string) int64 {
	tb.Helper()
	var n int64
	buf := make([]byte, 1<<20)
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		for {
			k, err := f.Read(buf)
			n += int64(bytes.Count(buf[:k], []byte{'\n'}))
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}
