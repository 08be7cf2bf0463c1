package file

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/ocsfenc"
)

// lineFunc appends e as one NDJSON line, newline included; an error means
// e can never be written in the sink's format.
type lineFunc func(dst []byte, e *record.Envelope) ([]byte, error)

// envelopeLine is the lineFunc of format "envelope"
// (record.Envelope.AppendNDJSON).
func envelopeLine(dst []byte, e *record.Envelope) ([]byte, error) { return e.AppendNDJSON(dst), nil }

// ocsfLine returns the lineFunc of format "ocsf": the event, then a
// newline (the event is one line already).
func ocsfLine(enc *ocsfenc.Encoder) lineFunc {
	return func(dst []byte, e *record.Envelope) ([]byte, error) {
		out, err := enc.Append(dst, e)
		if err != nil {
			return dst, err
		}
		return append(out, '\n'), nil
	}
}

// errUnwritable marks an envelope that the sink's format cannot hold: a
// retry cannot change it.
var errUnwritable = errors.New("record cannot be written in the configured format")

// Each gzip member carries its own total length in an FEXTRA subfield, the
// way BGZF (samtools) does, so that Start can walk the members of a file
// left by a crash by reading a few bytes per member instead of inflating it
// all. gzip readers skip extra fields.
const (
	memberSI1, memberSI2 = 'S', 'X' // subfield id
	memberHeaderLen      = 20       // 10 fixed + XLEN 2 + SI1 SI2 LEN 2 + 4
	memberLenOffset      = 16       // where the uint32 total length sits
	// memberRawLimit caps the NDJSON bytes per member so that the member's
	// length always fits the uint32; a larger batch becomes several members.
	memberRawLimit = 64 << 20
)

// memberExtra is the FEXTRA payload: our subfield with a length placeholder.
var memberExtra = [8]byte{memberSI1, memberSI2, 4, 0}

// sliceWriter appends to a byte slice.
type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// appendGzip appends envs, each encoded by enc, as one or more complete
// gzip members (one unless the batch holds more than memberRawLimit bytes
// of NDJSON). zw is reused; line is scratch space. It returns dst and the
// grown scratch.
func appendGzip(dst []byte, envs []record.Envelope, enc lineFunc, zw *gzip.Writer, line []byte) ([]byte, []byte, error) {
	out := &sliceWriter{b: dst}
	for i := 0; i < len(envs); {
		start := len(out.b)
		zw.Reset(out)
		extra := memberExtra
		zw.Header.Extra = extra[:]
		raw := 0
		for ; i < len(envs) && (raw == 0 || raw < memberRawLimit); i++ {
			var err error
			if line, err = enc(line[:0], &envs[i]); err != nil {
				return dst, line, fmt.Errorf("%w: %w", errUnwritable, err)
			}
			raw += len(line)
			if _, err := zw.Write(line); err != nil {
				return dst, line, fmt.Errorf("gzip: %w", err)
			}
		}
		if err := zw.Close(); err != nil {
			return dst, line, fmt.Errorf("gzip: %w", err)
		}
		n := len(out.b) - start
		binary.LittleEndian.PutUint32(out.b[start+memberLenOffset:], uint32(n))
	}
	return out.b, line, nil
}

// memberLen reads the header of the member at the start of h (at least
// memberHeaderLen bytes) and returns its total length, or false when h does
// not start one of our members.
func memberLen(h []byte) (int64, bool) {
	if len(h) < memberHeaderLen || h[0] != 0x1f || h[1] != 0x8b || h[2] != 8 || h[3]&0x04 == 0 {
		return 0, false
	}
	if binary.LittleEndian.Uint16(h[10:]) < 8 || h[12] != memberSI1 || h[13] != memberSI2 || binary.LittleEndian.Uint16(h[14:]) != 4 {
		return 0, false
	}
	n := int64(binary.LittleEndian.Uint32(h[memberLenOffset:]))
	if n <= memberHeaderLen {
		return 0, false
	}
	return n, true
}

// checkMember inflates the single member in r to the end and reports
// whether it is complete and intact (CRC and size match, nothing trails).
func checkMember(r io.Reader) error {
	// A bufio.Reader is a flate.Reader, so gzip reads through it without
	// buffering of its own and Peek tells whether bytes trail the member.
	br := bufio.NewReader(r)
	zr, err := gzip.NewReader(br)
	if err != nil {
		return err
	}
	zr.Multistream(false)
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return err
	}
	if _, err := br.Peek(1); !errors.Is(err, io.EOF) {
		return errors.New("data after the member")
	}
	return nil
}
