package kafka

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/svcexport/collector/internal/record"
)

// DeadLetterFile is the name of the dead-letter file inside the directory
// given to New.
const DeadLetterFile = "dead-letters.ndjson"

// deadLetter is one record that can never be produced.
type deadLetter struct {
	env    *record.Envelope
	topic  string
	reason string // human text, for the file
	kind   string // bounded, for the metric's reason label
}

// deadLetters appends records that cannot be delivered to an NDJSON file,
// one line each: the C7 envelope plus "sink", "topic", "reason" and
// "dead_lettered_at". A line is fsynced before the batch that held it counts
// as written. The file is opened on first use (mode 0600) and appended to
// across restarts. Safe for concurrent use.
type deadLetters struct {
	path string
	now  func() time.Time

	mu     sync.Mutex
	f      *os.File
	closed bool
	buf    []byte
}

func newDeadLetters(dir string, now func() time.Time) *deadLetters {
	return &deadLetters{path: filepath.Join(dir, DeadLetterFile), now: now}
}

// write appends and fsyncs the lines of ds. On an error nothing of ds may
// be taken as written (a partial tail is cut off when possible).
func (d *deadLetters) write(ds []deadLetter) error {
	if len(ds) == 0 {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return errors.New("dead-letter file: sink is shut down")
	}
	if d.f == nil {
		if err := d.open(); err != nil {
			return err
		}
	}
	at := d.now()
	d.buf = d.buf[:0]
	for _, dl := range ds {
		d.buf = dl.env.AppendJSON(d.buf)
		d.buf = d.buf[:len(d.buf)-1] // reopen the object: drop its '}'
		d.buf = append(d.buf, `,"sink":"kafka","topic":`...)
		d.buf = appendJSONString(d.buf, dl.topic)
		d.buf = append(d.buf, `,"reason":`...)
		d.buf = appendJSONString(d.buf, dl.reason)
		d.buf = append(d.buf, `,"dead_lettered_at":"`...)
		d.buf = record.AppendTime(d.buf, at)
		d.buf = append(d.buf, "\"}\n"...)
	}
	st, err := d.f.Stat()
	if err != nil {
		return fmt.Errorf("dead-letter file %s: stat: %w", d.path, err)
	}
	if _, err := d.f.Write(d.buf); err != nil {
		_ = d.f.Truncate(st.Size()) // best effort: no torn line
		return fmt.Errorf("dead-letter file %s: append %d records: %w", d.path, len(ds), err)
	}
	if err := d.f.Sync(); err != nil {
		return fmt.Errorf("dead-letter file %s: fsync: %w", d.path, err)
	}
	return nil
}

// open opens the file for appending, creating it (and fsyncing its
// directory, so the new name survives a crash) when missing.
func (d *deadLetters) open() error {
	_, statErr := os.Stat(d.path)
	f, err := os.OpenFile(d.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("dead-letter file: open: %w", err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		if dir, err := os.Open(filepath.Dir(d.path)); err == nil {
			err = dir.Sync()
			dir.Close()
			if err != nil {
				f.Close()
				return fmt.Errorf("dead-letter file: fsync directory: %w", err)
			}
		}
	}
	d.f = f
	return nil
}

// close closes the file; later writes fail.
func (d *deadLetters) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	if d.f == nil {
		return nil
	}
	err := d.f.Close()
	d.f = nil
	if err != nil {
		return fmt.Errorf("dead-letter file %s: close: %w", d.path, err)
	}
	return nil
}

func appendJSONString(dst []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return append(dst, b...)
}
