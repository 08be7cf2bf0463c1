package harness

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/record"
)

// OCSFEvent is what the harness reads of an OCSF event (docs/ocsf.md): the
// record id, the source, the record time, the account member, and the
// record as sent when the sink wrote raw_data.
type OCSFEvent struct {
	ClassUID int   `json:"class_uid"`
	Time     int64 `json:"time"` // Unix milliseconds of the record time
	Metadata struct {
		UID       string `json:"uid"`
		LogName   string `json:"log_name"`
		TenantUID string `json:"tenant_uid"`
	} `json:"metadata"`
	RawData *string `json:"raw_data"`
}

// ParseOCSFEvent decodes the fields of OCSFEvent from one event and checks
// that it has a class, a uid and a log name.
func ParseOCSFEvent(line []byte) (*OCSFEvent, error) {
	var ev OCSFEvent
	if err := json.Unmarshal(line, &ev); err != nil {
		return nil, fmt.Errorf("not an OCSF event: %w: %.300s", err, line)
	}
	if ev.ClassUID == 0 || ev.Metadata.UID == "" || ev.Metadata.LogName == "" {
		return nil, fmt.Errorf("event without class_uid, metadata.uid or metadata.log_name: %.300s", line)
	}
	return &ev, nil
}

// ReadOCSFFileSink reads what the file sink wrote with format ocsf under
// dir (DIR/SOURCE/ACCOUNT/*.ndjson[.gz][.part]): each line must be an OCSF
// event of the stream its directory names (metadata.log_name is the
// source); it is counted under its metadata.uid and record time, in the
// account of its directory (an edge event: of its tenant_uid), and
// handed to each (when not nil) for the caller's own checks (the schema,
// raw_data). A line that fails fails tb.
func ReadOCSFFileSink(tb testing.TB, dir string, each func(k record.Stream, ev *OCSFEvent, line []byte)) *Output {
	tb.Helper()
	out := NewOutput()
	err := eachLine(dir, func(path string, line []byte) error {
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if len(parts) != 3 {
			return fmt.Errorf("%s is not DIR/SOURCE/ACCOUNT/FILE", path)
		}
		source, err1 := url.PathUnescape(parts[0])
		account, err2 := url.PathUnescape(parts[1])
		if err1 != nil || err2 != nil {
			return fmt.Errorf("%s: escaped names: %v %v", path, err1, err2)
		}
		ev, err := ParseOCSFEvent(line)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if ev.Metadata.LogName != source {
			return fmt.Errorf("%s: event of %s in the directory of %s", path, ev.Metadata.LogName, source)
		}
		k := record.Stream{Source: source, Account: account}
		if strings.HasPrefix(source, "edge_") && ev.Metadata.TenantUID != "" {
			// C6: an edge stream is one per token (its directory is
			// edge.account); each record is its account_name's, which
			// the event carries as tenant_uid, as the envelope does.
			k.Account = ev.Metadata.TenantUID
		}
		if each != nil {
			each(k, ev, line)
		}
		out.Add(k, ev.Metadata.UID, time.UnixMilli(ev.Time).UTC())
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}
