package ocsftest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/record"
)

// RecordsDir holds, relative to the module root, one file per source of
// records as the simulator served them (internal/ocsf/testdata/README.md).
const RecordsDir = "internal/ocsf/testdata/records"

// Times of the envelopes Envelopes builds.
var (
	WindowStart = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	WindowEnd   = WindowStart.Add(24 * time.Hour)
	FetchedAt   = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
)

// timeFields are the record time members (CONTRACT C3, C6) of the sources.
var timeFields = map[string]string{
	"changed_files": "startTime", "connections": "startTime", "dns": "createdTime",
	"user_logins": "createdTime", "agent_info": "createdTime", "audit_logs": "createdTime",
	"cloud_activities": "startTime", "edge_audit_events": "create_time", "edge_alerts": "create_time",
}

// Envelopes returns the envelopes of the records under RecordsDir (the
// first record of each shape per source: 21 records of the nine sources),
// built as a poller builds them, in the window [WindowStart, WindowEnd)
// fetched at FetchedAt, grouped by source in a fixed order.
func Envelopes(tb testing.TB) []record.Envelope {
	tb.Helper()
	root, err := moduleRoot()
	if err != nil {
		tb.Fatal(err)
	}
	var out []record.Envelope
	var b record.Builder
	for _, source := range []string{"changed_files", "connections", "dns", "user_logins", "agent_info",
		"audit_logs", "cloud_activities", "edge_audit_events", "edge_alerts"} {
		f, err := os.Open(filepath.Join(root, filepath.FromSlash(RecordsDir), source+".ndjson"))
		if err != nil {
			tb.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			account, raw, ok := strings.Cut(sc.Text(), "\t")
			if !ok {
				tb.Fatalf("%s: line %q is not account<TAB>record", source, sc.Text())
			}
			e, flaw := b.Build(source, account, timeFields[source], WindowStart, WindowEnd, FetchedAt, []byte(raw))
			if flaw != 0 {
				tb.Fatalf("%s: record flawed (%v): %s", source, flaw, raw)
			}
			out = append(out, e)
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

// Event is what CheckEvent reads of an event.
type Event struct {
	ClassUID int   `json:"class_uid"`
	Time     int64 `json:"time"`
	Metadata struct {
		UID       string `json:"uid"`
		LogName   string `json:"log_name"`
		TenantUID string `json:"tenant_uid"`
		Version   string `json:"version"`
	} `json:"metadata"`
	RawData *string `json:"raw_data"`
}

// CheckEvent returns what is wrong with event as the OCSF event of e: it
// must be one line of valid OCSF 1.3.0 (Validate), metadata.uid must be the
// record id, metadata.log_name the source, time the record time in Unix
// milliseconds, and raw_data the record exactly when rawData is set.
func (s *Schema) CheckEvent(event []byte, e *record.Envelope, rawData bool) []string {
	if bytes.ContainsAny(event, "\r\n") {
		return []string{"the event spans lines"}
	}
	errs := s.Validate(event)
	var ev Event
	if err := json.Unmarshal(event, &ev); err != nil {
		return append(errs, err.Error())
	}
	if ev.Metadata.UID != e.ID {
		errs = append(errs, fmt.Sprintf("metadata.uid %q, want the record id %s", ev.Metadata.UID, e.ID))
	}
	if ev.Metadata.LogName != e.Source {
		errs = append(errs, fmt.Sprintf("metadata.log_name %q, want %s", ev.Metadata.LogName, e.Source))
	}
	if ev.Time != e.Time.UnixMilli() {
		errs = append(errs, fmt.Sprintf("time %d, want %d", ev.Time, e.Time.UnixMilli()))
	}
	raw := string(e.Record)
	if e.Original != nil {
		raw = string(e.Original)
	}
	switch {
	case rawData && (ev.RawData == nil || *ev.RawData != raw):
		errs = append(errs, fmt.Sprintf("raw_data %v, want the record %s", ev.RawData, raw))
	case !rawData && ev.RawData != nil:
		errs = append(errs, "raw_data set, though not asked for")
	}
	return errs
}
