package tap

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/svcexport/collector/internal/secret"
)

// Result is how a tap read by Read went.
type Result struct {
	// Envelopes is how many envelopes were written out.
	Envelopes int
	// Dropped is how many envelopes the collector dropped because the
	// tap read slower than it delivered (the Tap-Dropped trailer).
	Dropped int64
	// End is why the stream ended: EndLimit, EndTimeout, or "interrupted"
	// when ctx ended first. Read returns an error for the other ends.
	End string
}

// EndInterrupted is Result.End when Read's context ended the tap.
const EndInterrupted = "interrupted"

// Errors of Read, for errors.Is.
var (
	// ErrUnreachable: no collector answers at the address.
	ErrUnreachable = errors.New("the collector cannot be reached")
	// ErrRefused: the collector answered with an error (the tap off, no
	// or a wrong token, a source or account it does not collect, too many
	// taps, stopping); the error holds its words.
	ErrRefused = errors.New("the collector refused the tap")
	// ErrStopped: the collector stopped, or the connection broke, before
	// the tap got its envelopes.
	ErrStopped = errors.New("the tap ended before its limit")
)

// Read taps the collector whose telemetry server is at base (e.g.
// http://127.0.0.1:9464) for req and copies the envelopes to w, one NDJSON
// line each, as they come. It returns when the stream ends (the limit or
// the timeout reached; the collector stopping is ErrStopped) or when ctx
// ends (End "interrupted", no error). token, when set, is sent as the
// bearer token the collector's metrics.tap.token_file holds. hc nil is
// http.DefaultClient; it must have no Timeout, since a tap lasts until its
// envelopes come.
func Read(ctx context.Context, hc *http.Client, base string, token secret.Secret, req Request, w io.Writer) (Result, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	var res Result
	if err := req.Validate(); err != nil {
		return res, err
	}
	u := strings.TrimRight(base, "/") + "/tap?" + req.Query().Encode()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return res, err
	}
	if token.IsSet() {
		hreq.Header.Set("Authorization", "Bearer "+token.Reveal())
	}
	resp, err := hc.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			res.End = EndInterrupted
			return res, nil
		}
		return res, fmt.Errorf("%w at %s: %v", ErrUnreachable, base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		msg := strings.TrimSpace(string(body))
		if msg == "" {
			msg = resp.Status
		}
		switch {
		case resp.StatusCode == http.StatusNotFound && msg == "404 page not found":
			// A server that is no collector, or one from before taps.
			msg = "no /tap endpoint at " + base + " (" + resp.Status + "): is it a collector's metrics.listen?"
		case resp.StatusCode == http.StatusUnauthorized && !token.IsSet():
			msg += " (no token was sent: --token-file)"
		}
		return res, fmt.Errorf("%w: %s", ErrRefused, msg)
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A line longer than the buffer: copy it whole.
			long := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 && err == nil {
			if _, werr := w.Write(line); werr != nil {
				return res, fmt.Errorf("write an envelope: %w", werr)
			}
			res.Envelopes++
		}
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			res.End = EndInterrupted
			return res, nil
		}
		if err != io.EOF {
			return res, fmt.Errorf("%w: after %d envelopes: %v", ErrStopped, res.Envelopes, err)
		}
		break
	}
	res.Dropped, _ = strconv.ParseInt(resp.Trailer.Get(TrailerDropped), 10, 64)
	res.End = resp.Trailer.Get(TrailerEnd)
	switch res.End {
	case EndLimit, EndTimeout:
		return res, nil
	case EndStopping:
		return res, fmt.Errorf("%w: the collector is stopping; %d envelopes", ErrStopped, res.Envelopes)
	default:
		return res, fmt.Errorf("%w: the stream ended without saying why after %d envelopes", ErrStopped, res.Envelopes)
	}
}
