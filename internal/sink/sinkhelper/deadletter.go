package sinkhelper

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

// DeadLetterFile is the name of the dead-letter file in the directory given
// to WithDeadLetters (the checkpoint's, in the daemon), for a sink named
// after its type; see DeadLetterFileOf for the others.
const DeadLetterFile = "dead-letters.ndjson"

// DeadLetter is one record that its sink can never write.
type DeadLetter struct {
	// Env is the record.
	Env *record.Envelope
	// Dest is where it was meant to go (a topic).
	Dest string
	// Reason says why, for people: it goes into the file and the log.
	Reason string
	// Kind is the reason in one word, the value of the reason label of
	// collector_dead_letters_total ("too_large"): a small fixed set.
	Kind string
}

// deadLetter appends ds to the dead-letter file, one line each (the C7
// envelope plus "sink", the destination key, "reason" and
// "dead_lettered_at"), fsyncs it, then counts and logs each record. It
// returns nil only when every line is durable: Write then acknowledges
// those records as handled. On an error nothing of ds may be taken as
// written. A sink without WithDeadLetters gets an error.
func (b *Base) deadLetter(ds []DeadLetter) error {
	if len(ds) == 0 {
		return nil
	}
	if b.dl == nil {
		return fmt.Errorf("%s sink: no dead-letter file for %d records", b.name, len(ds))
	}
	if err := b.dl.write(ds); err != nil {
		return err
	}
	for _, d := range ds {
		b.m.deadLetters.WithLabelValues(d.Kind).Inc()
		b.log.Warn("record dead-lettered", "id", d.Env.ID, "source", d.Env.Source, "account", d.Env.Account,
			b.dlKey, d.Dest, "reason", d.Reason, "file", b.dl.path)
	}
	return nil
}

// deadLetters appends records to an NDJSON file, opened on first use (mode
// 0600) and appended to across restarts. Safe for concurrent use.
type deadLetters struct {
	path    string
	sink    string
	destKey string
	now     func() time.Time

	mu     sync.Mutex
	f      *os.File
	closed bool
	buf    []byte
}

func newDeadLetters(dir, file, sink, destKey string, now func() time.Time) *deadLetters {
	return &deadLetters{path: filepath.Join(dir, file), sink: sink, destKey: destKey, now: now}
}

// write appends and fsyncs the lines of ds; a partial tail is cut off when
// possible.
func (d *deadLetters) write(ds []DeadLetter) error {
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
		d.buf = dl.Env.AppendJSON(d.buf)
		d.buf = d.buf[:len(d.buf)-1] // reopen the object: drop its '}'
		d.buf = append(d.buf, `,"sink":`...)
		d.buf = appendJSONString(d.buf, d.sink)
		d.buf = append(d.buf, ',')
		d.buf = appendJSONString(d.buf, d.destKey)
		d.buf = append(d.buf, ':')
		d.buf = appendJSONString(d.buf, dl.Dest)
		d.buf = append(d.buf, `,"reason":`...)
		d.buf = appendJSONString(d.buf, dl.Reason)
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
