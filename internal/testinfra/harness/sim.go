package harness

import (
	"github.com/svcexport/collector/internal/record"

	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/testinfra/simtest"
)

// StartSim starts a simulator on a free loopback port with apisim's
// defaults (production-shaped rates and limits, no faults) adjusted by each
// of muts in order, and closes it when tb ends.
func StartSim(tb testing.TB, muts ...func(*apisim.Config)) *apisim.Server {
	tb.Helper()
	return simtest.Start(tb, func(c *apisim.Config) {
		for _, mut := range muts {
			if mut != nil {
				mut(c)
			}
		}
	})
}

// QuickRates gives a simulator modest rates, so that three days of nine
// sources stay quick under the race detector, and settled alerts: they take
// their updates within a minute, before a collector with a lag of 2m reads
// them, so one version of each alert is final (C6). Pass it to StartSim
// before the test's own changes.
func QuickRates(c *apisim.Config) {
	c.Rates = map[string]float64{
		"changed_files": 400, "connections": 600, "dns": 500, "user_logins": 150, "agent_info": 60,
		"audit_logs": 40, "cloud_activities": 300, "edge_audit_events": 120, "edge_alerts": 30,
	}
	c.AlertUpdateWindow = time.Minute
}

// CoreSources are the sources of the core API (CONTRACT C3), written down
// here independently of internal/source.
func CoreSources() []string {
	return []string{"changed_files", "connections", "dns", "user_logins", "agent_info", "audit_logs", "cloud_activities"}
}

// EdgeSources are the sources of the edge API (C6).
func EdgeSources() []string { return []string{"edge_audit_events", "edge_alerts"} }

// AllSources are the core sources, then the edge sources.
func AllSources() []string { return append(CoreSources(), EdgeSources()...) }

// Accounts are the two accounts the simulator serves by default and a
// Config reads unless told otherwise.
func Accounts() []string { return []string{"acme", "acme-dev"} }

// Streams returns every stream of sources x accounts, sorted.
func Streams(sources, accounts []string) []record.Stream {
	var out []record.Stream
	for _, s := range sources {
		for _, a := range accounts {
			out = append(out, record.Stream{Source: s, Account: a})
		}
	}
	sortStreams(out)
	return out
}

// AllStreams are the streams of every source of both Accounts.
func AllStreams() []record.Stream { return Streams(AllSources(), Accounts()) }

func sortStreams(s []record.Stream) {
	slices.SortFunc(s, func(a, b record.Stream) int { return cmp.Compare(a.Source+a.Account, b.Source+b.Account) })
}

// APIRecords fetches the records of one window of a core search from the
// simulator as any client would (C1, C3): the bytes it serves, one page
// (a window with more records than a page fails t). path is the search's,
// e.g. /api/v2/Activities/DNSs/search.
func APIRecords(t testing.TB, sim *apisim.Server, path, account string, start, end time.Time) []json.RawMessage {
	t.Helper()
	post := func(url, body string, hdr map[string]string) []byte {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode/100 != 2 {
			t.Fatalf("POST %s: %d %s (%v)", url, resp.StatusCode, b, err)
		}
		return b
	}
	var tok struct{ Token string }
	if err := json.Unmarshal(post(sim.URL()+"/api/v2/access/tokens", fmt.Sprintf(`{"keyId":%q,"expiryTime":600}`, KeyID),
		map[string]string{"X-SVC-UAKS": Secret}), &tok); err != nil || tok.Token == "" {
		t.Fatalf("token: %v", err)
	}
	body := fmt.Sprintf(`{"timeFilter":{"startTime":%q,"endTime":%q}}`, start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339))
	var page struct {
		Paging *struct {
			Rows, TotalRows int
		}
		Data []json.RawMessage
	}
	if err := json.Unmarshal(post(sim.URL()+path, body, map[string]string{"Authorization": "Bearer " + tok.Token, "Account-Name": account}), &page); err != nil {
		t.Fatal(err)
	}
	if page.Paging != nil && page.Paging.TotalRows != len(page.Data) {
		t.Fatalf("%s [%s, %s): %d of %d rows on the first page; pick a smaller window", path, start, end, len(page.Data), page.Paging.TotalRows)
	}
	return page.Data
}
