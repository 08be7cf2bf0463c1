package file

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/svcexport/collector/internal/record"
)

// seqBatch is batch number seq of a stream: records 2*seq and 2*seq+1
// (so a file's lines tell which batches it holds), its Seq set as the
// pipeline sets it.
func seqBatch(t testing.TB, source, account string, seq int) *record.Batch {
	b := batch(t, source, account, 2*seq, 2)
	b.Seq = uint64(seq)
	return b
}

var recordNumber = regexp.MustCompile(`"id":([0-9]+),"agentId"`)

// dataFile is one of the sink's files on disk.
type dataFile struct {
	path   string
	name   fileName
	size   int64
	maxSeq int // highest batch seq in it
	lines  int
}

// dataFiles lists every data file of the stream (every directory of the
// default layout) in writing order.
func dataFiles(t *testing.T, dir, source, account string) []dataFile {
	t.Helper()
	prefix := escapeName(source) + "-" + escapeName(account) + "-"
	var out []dataFile
	for _, p := range streamFiles(t, dir, source, account) {
		n, ok := parseFileName(prefix, filepath.Base(p))
		if !ok {
			t.Fatalf("%s: not one of our names", p)
		}
		f := dataFile{path: p, name: n, size: fileSize(t, p), maxSeq: -1}
		for _, l := range readLines(t, p) {
			m := recordNumber.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("%s: no record number in %.80q", p, l)
			}
			i, _ := strconv.Atoi(m[1])
			f.maxSeq = max(f.maxSeq, i/2)
			f.lines++
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b dataFile) int {
		if a.name.less(b.name) {
			return -1
		}
		return 1
	})
	return out
}

func retentionConfig(dir string, r RetentionConfig) Config {
	cfg := testConfig(dir)
	cfg.MaxBytes = 4 << 10 // about three batches a file: many rotations
	cfg.MaxAge = 0
	cfg.Fsync = false // a long run; durability is not what is tested here
	cfg.Retention = r
	return cfg
}

// pruned reads what the sink recorded of the files it deleted.
func pruned(t *testing.T, dir, source, account string) []PrunedFile {
	t.Helper()
	ps, err := ReadPruned(dir, record.Stream{Source: source, Account: account})
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// checkNothingLost fails unless every record written is in a file or
// counted in the record of pruned files.
func checkNothingLost(t *testing.T, dir, source, account string, batches int) {
	t.Helper()
	lines := 0
	for _, f := range dataFiles(t, dir, source, account) {
		lines += f.lines
	}
	var prunedLines int64
	for _, p := range pruned(t, dir, source, account) {
		prunedLines += p.Records
		if p.First.IsZero() || p.Last.Before(p.First) || p.Reason == "" {
			t.Errorf("record of a pruned file without its times or reason: %+v", p)
		}
		if _, err := os.Stat(filepath.Join(dir, p.File)); err == nil {
			t.Errorf("%s is recorded as pruned and still there", p.File)
		}
	}
	if int64(lines)+prunedLines != int64(2*batches) {
		t.Errorf("%s/%s: %d lines in files + %d recorded as pruned, want %d written", source, account, lines, prunedLines, 2*batches)
	}
}

// Over a long run of rotations, max_files keeps the newest closed files of
// each stream, the open file, and every file with a batch the checkpoint
// has not committed; a stream nobody commits keeps everything.
func TestRetentionByCountKeepsTheNewestTheOpenAndTheUncommittedFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const maxFiles = 4
	s, _ := startSink(t, retentionConfig(dir, RetentionConfig{MaxFiles: maxFiles}))
	a := record.Stream{Source: "dns", Account: "acme"}
	committed := 0
	for seq := range 600 {
		mustWrite(t, s, seqBatch(t, a.Source, a.Account, seq))
		mustWrite(t, s, seqBatch(t, "dns", "other", seq))
		if seq%25 != 24 {
			continue
		}
		// The checkpoint lags the writes by 40 batches.
		committed = max(0, seq-40)
		s.Committed(a, uint64(committed))
		if err := s.prune(); err != nil {
			t.Fatal(err)
		}
		files := dataFiles(t, dir, a.Source, a.Account)
		last := files[len(files)-1]
		if !last.name.part {
			t.Fatalf("after batch %d the newest file %s is not the open one", seq, last.path)
		}
		closed := files[:len(files)-1]
		var uncommitted int
		for _, f := range closed {
			if f.name.part {
				t.Fatalf("a second file in progress: %s", f.path)
			}
			if f.maxSeq >= committed {
				uncommitted++
			}
		}
		if want := max(maxFiles, uncommitted); len(closed) != want {
			t.Fatalf("after batch %d (committed below %d): %d closed files, want %d (%d of them uncommitted)", seq, committed, len(closed), want, uncommitted)
		}
		// What stays is the newest run of files: nothing newer was deleted.
		if len(closed) > 0 && closed[0].maxSeq < committed && len(closed) > maxFiles {
			t.Fatalf("a committed file beyond the limit stays: %s", closed[0].path)
		}
	}
	if n := len(pruned(t, dir, a.Source, a.Account)); n < 100 {
		t.Errorf("only %d files pruned over the run", n)
	}
	other := dataFiles(t, dir, "dns", "other")
	if len(other) < 100 || len(pruned(t, dir, "dns", "other")) != 0 {
		t.Errorf("a stream the checkpoint never committed: %d files, %d pruned; want all kept", len(other), len(pruned(t, dir, "dns", "other")))
	}
	checkNothingLost(t, dir, a.Source, a.Account, 600)
	checkNothingLost(t, dir, "dns", "other", 600)
}

// max_bytes bounds the whole directory, deleting the oldest closed files
// of every stream first, but never the newest closed file of a stream, the
// open files or an uncommitted file.
func TestRetentionByBytesDeletesTheOldestFilesOfTheWholeDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const limit = 40 << 10
	s, _ := startSink(t, retentionConfig(dir, RetentionConfig{MaxBytes: limit}))
	streams := []record.Stream{{Source: "dns", Account: "acme"}, {Source: "dns", Account: "beta"}, {Source: "audit_logs", Account: "acme"}}
	for seq := range 300 {
		for _, k := range streams {
			mustWrite(t, s, seqBatch(t, k.Source, k.Account, seq))
		}
		if seq%20 == 19 {
			for _, k := range streams[:2] { // the third stream is never committed
				s.Committed(k, uint64(seq+1))
			}
			if err := s.prune(); err != nil {
				t.Fatal(err)
			}
		}
	}
	var total, uncommittedBytes int64
	for _, k := range streams {
		files := dataFiles(t, dir, k.Source, k.Account)
		for _, f := range files {
			total += f.size
		}
		if k == streams[2] {
			uncommittedBytes = total
			for _, f := range files[:len(files)-1] {
				uncommittedBytes += f.size
			}
			if n := len(pruned(t, dir, k.Source, k.Account)); n != 0 {
				t.Errorf("%d files of the uncommitted stream pruned", n)
			}
		}
	}
	var fromCommitted int64
	for _, k := range streams[:2] {
		files := dataFiles(t, dir, k.Source, k.Account)
		for _, f := range files {
			fromCommitted += f.size
		}
		if len(files) < 2 || !files[len(files)-1].name.part || files[len(files)-2].name.part {
			t.Errorf("%s: want the newest closed file and the open one kept, got %d files", k, len(files))
		}
		ps := pruned(t, dir, k.Source, k.Account)
		if len(ps) < 50 {
			t.Errorf("%s: only %d files pruned", k, len(ps))
		}
		// Oldest first: every pruned file is older than every file left.
		for _, p := range ps {
			n, _ := parseFileName(escapeName(k.Source)+"-"+escapeName(k.Account)+"-", filepath.Base(p.File))
			if !n.less(files[0].name) {
				t.Errorf("%s pruned while the older %s stays", p.File, files[0].path)
			}
			if p.Reason != pruneBytes {
				t.Errorf("%s pruned for %q", p.File, p.Reason)
			}
		}
		checkNothingLost(t, dir, k.Source, k.Account, 300)
	}
	// The committed streams fit in what the uncommitted one leaves, give
	// or take the one file a pass may leave over the limit.
	if fromCommitted > max(limit-(total-fromCommitted), 0)+2*(4<<10)+2*(8<<10) {
		t.Errorf("%d bytes of committed streams left beside %d uncommitted, limit %d", fromCommitted, total-fromCommitted, limit)
	}
}

// max_age deletes the closed files last written longer ago than it, but
// not the newest closed file nor an uncommitted one.
func TestRetentionByAgeDeletesOldClosedFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, reg := startSink(t, retentionConfig(dir, RetentionConfig{MaxAge: time.Hour}))
	k := record.Stream{Source: "dns", Account: "acme"}
	for seq := range 60 {
		mustWrite(t, s, seqBatch(t, k.Source, k.Account, seq))
	}
	files := dataFiles(t, dir, k.Source, k.Account)
	if len(files) < 12 {
		t.Fatalf("%d files: too few rotations", len(files))
	}
	// The older half was last written three hours ago.
	old := files[:len(files)/2]
	for _, f := range old {
		ago := time.Now().Add(-3 * time.Hour)
		if err := os.Chtimes(f.path, ago, ago); err != nil {
			t.Fatal(err)
		}
	}
	// The checkpoint has committed the batches of the old files but the
	// last two (it commits in order: the uncommitted are the newest).
	s.Committed(k, uint64(old[len(old)-2].maxSeq))
	if err := s.prune(); err != nil {
		t.Fatal(err)
	}
	left := dataFiles(t, dir, k.Source, k.Account)
	if want := len(files) - len(old) + 2; len(left) != want {
		t.Fatalf("%d files left, want %d: the %d recent ones and the 2 uncommitted old ones", len(left), want, len(files)-len(old))
	}
	if left[0].path != old[len(old)-2].path || left[1].path != old[len(old)-1].path {
		t.Errorf("the uncommitted old files went")
	}
	s.Committed(k, 60)
	if err := s.prune(); err != nil {
		t.Fatal(err)
	}
	if left := dataFiles(t, dir, k.Source, k.Account); len(left) != len(files)-len(old) {
		t.Errorf("%d files left once all is committed, want %d", len(left), len(files)-len(old))
	}
	if got := testutil.ToFloat64(prunedCounter(t, reg, pruneAge)); got != float64(len(old)) {
		t.Errorf("collector_sink_files_pruned_total{reason=max_age} = %v, want %d", got, len(old))
	}
	checkNothingLost(t, dir, k.Source, k.Account, 60)

	// Even when everything is old, the newest closed file stays.
	for _, f := range dataFiles(t, dir, k.Source, k.Account) {
		ago := time.Now().Add(-3 * time.Hour)
		if err := os.Chtimes(f.path, ago, ago); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.prune(); err != nil {
		t.Fatal(err)
	}
	if left := dataFiles(t, dir, k.Source, k.Account); len(left) != 2 || !left[1].name.part {
		t.Errorf("%d files left of an old stream, want the newest closed one and the open one", len(left))
	}
}

// Files that an earlier run left are not this run's to wait for: their
// records were committed or are fetched again. Without a limit nothing
// goes.
func TestRetentionOfFilesOfAnEarlierRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := retentionConfig(dir, RetentionConfig{})
	s1, err := New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s1.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for seq := range 40 {
		mustWrite(t, s1, seqBatch(t, "dns", "acme", seq))
	}
	if err := s1.prune(); err != nil {
		t.Fatal(err)
	}
	if err := s1.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := dataFiles(t, dir, "dns", "acme")
	if len(before) < 10 {
		t.Fatalf("%d files", len(before))
	}
	cfg.Retention.MaxFiles = 3
	s2, _ := startSink(t, cfg)
	if err := s2.prune(); err != nil { // no commit in this run yet
		t.Fatal(err)
	}
	if left := dataFiles(t, dir, "dns", "acme"); len(left) != 3 || left[2].path != before[len(before)-1].path {
		t.Errorf("%d files of the earlier run left, want its newest 3", len(left))
	}
	checkNothingLost(t, dir, "dns", "acme", 40)
}

func prunedCounter(t *testing.T, reg *prometheus.Registry, reason string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "collector_sink_files_pruned_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "x", Help: "x"}, func() float64 { return m.GetCounter().GetValue() })
				}
			}
		}
	}
	t.Fatalf("no collector_sink_files_pruned_total{reason=%q}", reason)
	return nil
}

// A reader that takes only final names (*.ndjson) never sees a file that
// is still growing or a line that is not whole; only the file being
// written has the in-progress name.
func TestAFileGetsItsFinalNameOnlyWhenComplete(t *testing.T) {
	t.Parallel()
	for _, gz := range []bool{false, true} {
		t.Run(fmt.Sprintf("gzip=%v", gz), func(t *testing.T) {
			dir := t.TempDir()
			cfg := retentionConfig(dir, RetentionConfig{})
			cfg.Gzip = gz
			s, _ := startSink(t, cfg)
			ext := extPlain
			if gz {
				ext = extGzip
			}
			stop := make(chan struct{})
			seen := map[string][]byte{} // final name -> content when first seen
			var wg sync.WaitGroup
			var readErr error
			wg.Go(func() {
				d := filepath.Join(dir, "dns", "acme")
				for {
					select {
					case <-stop:
						return
					default:
					}
					entries, _ := os.ReadDir(d)
					parts := 0
					for _, e := range entries {
						name := e.Name()
						if strings.HasSuffix(name, extPart) {
							parts++
						}
						if !strings.HasSuffix(name, ext) || seen[name] != nil {
							continue
						}
						b, err := os.ReadFile(filepath.Join(d, name))
						if err != nil {
							continue // pruned or renamed meanwhile: not the case here
						}
						seen[name] = b
					}
					if parts > 1 {
						readErr = fmt.Errorf("%d files in progress at once", parts)
						return
					}
				}
			})
			for seq := range 300 {
				mustWrite(t, s, seqBatch(t, "dns", "acme", seq))
			}
			close(stop)
			wg.Wait()
			if readErr != nil {
				t.Fatal(readErr)
			}
			if len(seen) < 20 {
				t.Fatalf("the reader saw %d complete files", len(seen))
			}
			for name, b := range seen {
				now, err := os.ReadFile(filepath.Join(dir, "dns", "acme", name))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(b, now) {
					t.Errorf("%s changed after it got its final name: %d bytes then, %d now", name, len(b), len(now))
				}
			}
		})
	}
}

// A crash leaves the file being written under its in-progress name only;
// Start cuts its torn tail and gives it its final name, and every file
// with a final name is whole.
func TestACrashLeavesOnlyTheInProgressNameWhichStartFinishes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s1, _ := startSink(t, retentionConfig(dir, RetentionConfig{}))
	var bs []*record.Batch
	for seq := range 20 {
		b := seqBatch(t, "dns", "acme", seq)
		mustWrite(t, s1, b)
		bs = append(bs, b)
	}
	crashed := copyTree(t, dir)
	files := streamFiles(t, crashed, "dns", "acme")
	var parts []string
	for _, f := range files {
		if strings.HasSuffix(f, extPart) {
			parts = append(parts, f)
			continue
		}
		if b, _ := os.ReadFile(f); len(b) == 0 || b[len(b)-1] != '\n' {
			t.Errorf("%s has its final name and is not whole", f)
		}
	}
	if len(parts) != 1 || parts[0] != files[len(files)-1] {
		t.Fatalf("in progress after the crash: %q, want the newest file only", parts)
	}
	appendFile(t, parts[0], `{"id":"0123","source":"dns","rec`)

	startSink(t, retentionConfig(crashed, RetentionConfig{}))
	for _, f := range streamFiles(t, crashed, "dns", "acme") {
		if strings.HasSuffix(f, extPart) {
			t.Errorf("%s still in progress after Start", f)
		}
	}
	if got, want := idsOf(t, crashed, "dns", "acme"), idsOfBatches(bs...); !slices.Equal(got, want) {
		t.Errorf("after Start: %d lines, want %d", len(got), len(want))
	}
}

// With a time-partitioned path each batch goes to the directory of the
// time its page was fetched; a file never spans two directories, and
// retention, Start and StreamDirs find the files there.
func TestTimePartitionedPathsFollowTheFetchTime(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := retentionConfig(dir, RetentionConfig{MaxFiles: 1})
	cfg.Path = "{source}/{account}/{yyyy}/{mm}/dt={dd}"
	s, _ := startSink(t, cfg)
	day0 := time.Date(2026, 11, 22, 23, 0, 0, 0, time.UTC)
	var all []*record.Batch
	for seq := range 30 {
		b := seqBatch(t, "dns", "acme", seq)
		fetched := day0.Add(time.Duration(seq) * 10 * time.Minute) // crosses midnight at seq 6, the month at 24 h
		for i := range b.Envelopes {
			b.Envelopes[i].FetchedAt = fetched
		}
		mustWrite(t, s, b)
		all = append(all, b)
	}
	want := map[string][]uint64{}
	for _, b := range all {
		d := filepath.Join("dns", "acme", b.Envelopes[0].FetchedAt.Format("2006/01/dt=02"))
		want[d] = append(want[d], b.Seq)
	}
	if len(want) != 2 {
		t.Fatalf("batches over %d days, want 2", len(want))
	}
	dirs, err := StreamDirs(dir, cfg.Path, "dns", "acme")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) != 2 {
		t.Fatalf("StreamDirs = %q, want the 2 day directories", dirs)
	}
	for _, d := range dirs {
		rel, _ := filepath.Rel(dir, d)
		seqs := want[rel]
		if seqs == nil {
			t.Fatalf("unexpected directory %s", rel)
		}
		entries, _ := os.ReadDir(d)
		var got []uint64
		for _, e := range entries {
			for _, l := range readLines(t, filepath.Join(d, e.Name())) {
				i, _ := strconv.Atoi(recordNumber.FindStringSubmatch(l)[1])
				if i%2 == 0 {
					got = append(got, uint64(i/2))
				}
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, seqs) {
			t.Errorf("%s holds batches %v, want %v", rel, got, seqs)
		}
	}
	// Retention sees every partition of the stream: with everything
	// committed, one closed file of the stream stays (in the newest day)
	// besides the open one; the emptied day's directory goes.
	s.Committed(record.Stream{Source: "dns", Account: "acme"}, 30)
	if err := s.prune(); err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, d := range []string{"2026/11/dt=22", "2026/11/dt=23"} {
		entries, _ := os.ReadDir(filepath.Join(dir, "dns", "acme", d))
		for _, e := range entries {
			left = append(left, d+"/"+e.Name())
		}
	}
	if len(left) != 2 || !strings.HasPrefix(left[0], "2026/11/dt=23") {
		t.Errorf("left after retention: %q, want 2 files of the newest day", left)
	}
	if _, err := os.Stat(filepath.Join(dir, "dns", "acme", "2026/11/dt=22")); !os.IsNotExist(err) {
		t.Errorf("the emptied day directory stays (%v)", err)
	}
	var prunedRecords int64
	for _, p := range pruned(t, dir, "dns", "acme") {
		prunedRecords += p.Records
		if !strings.HasPrefix(p.File, "dns/acme/2026/11/dt=2") {
			t.Errorf("pruned file recorded as %s", p.File)
		}
	}
	lines := 0
	for _, l := range left {
		lines += len(readLines(t, filepath.Join(dir, "dns", "acme", l)))
	}
	if int64(lines)+prunedRecords != 60 {
		t.Errorf("%d lines left and %d pruned, want 60", lines, prunedRecords)
	}
}

// Every series of the sink's error and retention counters exists at 0
// before anything happened.
func TestCountersExistAtZeroFromTheStart(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	if _, err := New(testConfig(t.TempDir()), reg, nil); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			fmt.Fprintf(&b, "%s{%s} %v\n", mf.GetName(), strings.Join(labels, ","), m.GetCounter().GetValue())
		}
	}
	for _, kind := range []string{kindInvalid, kindOpen, kindWrite, kindSync, kindTruncate, kindCanceled, "state"} {
		if want := fmt.Sprintf("collector_sink_errors_total{kind=%s,sink=file} 0\n", kind); !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
	for _, reason := range []string{pruneCount, pruneBytes, pruneAge} {
		if want := fmt.Sprintf("collector_sink_files_pruned_total{reason=%s,sink=file} 0\n", reason); !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
}
