package file

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/svcexport/collector/internal/record"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	winStart = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	winEnd   = winStart.Add(time.Hour)
)

// rawRecord is a realistic DNS activity record of about 400 bytes; i makes
// it (and so its id) unique.
func rawRecord(i int) []byte {
	t := winStart.Add(time.Duration(i) * time.Millisecond)
	return fmt.Appendf(nil, `{"createdTime":%q,"id":%d,"agentId":"4f1c9a2e-7d3b-4c8e-9a51-%012d","hostName":"ws-%04d.corp.example.com","userName":"CORP\\jdoe","processName":"chrome.exe","processPath":"C:\\Program Files\\Google\\Chrome\\Application\\chrome.exe","queryName":"update-%d.googleapis.com","queryType":"A","responseCode":"NOERROR","answers":["142.250.74.99","142.250.74.100"],"ttl":300}`,
		t.Format("2006-01-02T15:04:05.000Z"), i, i, i%10000, i)
}

// batch returns n envelopes of source/account with records first..first+n-1.
func batch(t testing.TB, source, account string, first, n int) *record.Batch {
	t.Helper()
	var bld record.Builder
	b := &record.Batch{Source: source, Account: account, WindowStart: winStart, WindowEnd: winEnd}
	for i := first; i < first+n; i++ {
		e, flaw := bld.Build(source, account, "createdTime", winStart, winEnd, winEnd.Add(time.Minute), rawRecord(i))
		if flaw != 0 {
			t.Fatal(flaw)
		}
		b.Envelopes = append(b.Envelopes, e)
	}
	return b
}

func testConfig(dir string) Config {
	cfg := DefaultConfig()
	cfg.Dir = dir
	return cfg
}

// startSink builds and starts a sink on cfg, shut down at the end of the test.
func startSink(t testing.TB, cfg Config) (*Sink, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	s, err := New(cfg, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return s, reg
}

func mustWrite(t testing.TB, s *Sink, b *record.Batch) {
	t.Helper()
	if err := s.Write(context.Background(), b); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// streamFiles lists the data files of dir/source/account in name order.
func streamFiles(t testing.TB, dir, source, account string) []string {
	t.Helper()
	d := filepath.Join(dir, escapeName(source), escapeName(account))
	entries, err := os.ReadDir(d)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.Contains(e.Name(), ".ndjson") {
			out = append(out, filepath.Join(d, e.Name()))
		}
	}
	slices.Sort(out)
	return out
}

// readLines returns the lines of one file, inflating gzip files (including
// .part ones), and fails the test on a line without its newline.
func readLines(t testing.TB, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.Contains(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		r = zr
	}
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(data) == 0 {
		return nil
	}
	if data[len(data)-1] != '\n' {
		t.Fatalf("%s: last line has no newline: %q", path, tail(data))
	}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

func tail(b []byte) []byte { return b[max(0, len(b)-80):] }

// idsOf parses every line of every file of a stream as JSON and returns the
// ids in file and line order.
func idsOf(t testing.TB, dir, source, account string) []string {
	t.Helper()
	var ids []string
	for _, p := range streamFiles(t, dir, source, account) {
		for _, l := range readLines(t, p) {
			var e struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatalf("%s: line is not JSON: %v: %.80q", p, err, l)
			}
			ids = append(ids, e.ID)
		}
	}
	return ids
}

func idsOfBatches(bs ...*record.Batch) []string {
	var ids []string
	for _, b := range bs {
		for _, e := range b.Envelopes {
			ids = append(ids, e.ID)
		}
	}
	return ids
}

// faults wraps the files a sink opens to inject errors.
type faults struct {
	mu       sync.Mutex
	writeErr error // the next Write writes half its bytes and returns it
	syncErr  error // the next Sync returns it
	truncErr error // every Truncate returns it while set
	syncs    int
	onSync   func() // called before each Sync, outside mu
}

func (fl *faults) set(f func(*faults)) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	f(fl)
}

func (fl *faults) open(path string, flag int, perm os.FileMode) (segment, error) {
	seg, err := openOS(path, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: seg.(*os.File), fl: fl}, nil
}

type faultFile struct {
	*os.File
	fl *faults
}

func (f *faultFile) Write(p []byte) (int, error) {
	f.fl.mu.Lock()
	err := f.fl.writeErr
	f.fl.writeErr = nil
	f.fl.mu.Unlock()
	if err != nil {
		n, _ := f.File.Write(p[:len(p)/2])
		return n, err
	}
	return f.File.Write(p)
}

func (f *faultFile) Sync() error {
	f.fl.mu.Lock()
	hook := f.fl.onSync
	err := f.fl.syncErr
	f.fl.syncErr = nil
	f.fl.syncs++
	f.fl.mu.Unlock()
	if hook != nil {
		hook()
	}
	if err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *faultFile) Truncate(n int64) error {
	f.fl.mu.Lock()
	err := f.fl.truncErr
	f.fl.mu.Unlock()
	if err != nil {
		return err
	}
	return f.File.Truncate(n)
}
