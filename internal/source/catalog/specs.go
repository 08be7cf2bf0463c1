package catalog

import (
	"net/http"

	"github.com/svcexport/collector/internal/api"
)

// Spec describes one source: where its records come from and how to read
// them (CONTRACT C3, C6).
type Spec struct {
	// Name is the source name of C3/C6, used in ids, envelopes and metrics.
	Name string
	// Functionality names the rate bucket the source spends (C4).
	Functionality string
	// Method and Path of the first request; Path is relative to the base.
	Method, Path string
	// TimeField is the record time member (C3, C6).
	TimeField string
	// DataKey is the response member holding the records.
	DataKey string
	// Edge marks edge API sources (C6): no paging, epoch-millisecond
	// parameters, max_rows truncation.
	Edge bool
	// OrgLevel marks the source that has organization-level data (C2:
	// AuditLogs/search only).
	OrgLevel bool
	// Inventory marks the source whose records are the state of an
	// entity (agent_info: one record per agent, keyed by mid) that can be
	// read as an inventory besides its windows (SourceSettings.Inventory):
	// its search without timeFilter lists the current entities.
	Inventory bool
	// EntityKey is the member naming an Inventory source's entity.
	EntityKey string
	// Updates marks the source whose records change after creation (C6:
	// edge_alerts): besides its new records, every poll asks again for
	// those created in the trailing edge.alert_update_lookback (see
	// PollRequests).
	Updates bool
}

// PollRequests is how many requests one poll of a caught-up stream of
// the source makes with settings s and edge: its newest window (one
// request), and for a source with Updates the windows of at most
// max_window that cover edge.alert_update_lookback. The cadence of
// interval: auto shares a bucket among the streams by it (package
// source), so that what they spend is what the budget allows (C4). What
// is not asked every poll (the following of older alerts every
// edge.alert_follow_interval, pages past the first, windows split
// because an answer was full) is left to the reserve.
func (spec Spec) PollRequests(s SourceSettings, edge EdgeConfig) int {
	n := 1
	if spec.Updates && edge.AlertUpdateLookback > 0 {
		span := MaxWindowLimit
		if s.MaxWindow > 0 {
			span = min(s.MaxWindow, span)
		}
		n += int((edge.AlertUpdateLookback + span - 1) / span)
	}
	return n
}

// Source names (C3, C6).
const (
	SourceChangedFiles    = "changed_files"
	SourceConnections     = "connections"
	SourceDNS             = "dns"
	SourceUserLogins      = "user_logins"
	SourceAgentInfo       = "agent_info"
	SourceAuditLogs       = "audit_logs"
	SourceCloudActivities = "cloud_activities"
	SourceEdgeAuditEvents = "edge_audit_events"
	SourceEdgeAlerts      = "edge_alerts"
)

// specs is the table of C3 and C6, in a fixed order.
var specs = [...]Spec{
	{Name: SourceChangedFiles, Functionality: SourceChangedFiles, Method: http.MethodPost, Path: "/api/v2/Activities/ChangedFiles/search", TimeField: "startTime", DataKey: "data"},
	{Name: SourceConnections, Functionality: SourceConnections, Method: http.MethodPost, Path: "/api/v2/Activities/Connections/search", TimeField: "startTime", DataKey: "data"},
	{Name: SourceDNS, Functionality: SourceDNS, Method: http.MethodPost, Path: "/api/v2/Activities/DNSs/search", TimeField: "createdTime", DataKey: "data"},
	{Name: SourceUserLogins, Functionality: SourceUserLogins, Method: http.MethodPost, Path: "/api/v2/Activities/UserLogins/search", TimeField: "createdTime", DataKey: "data"},
	{Name: SourceAgentInfo, Functionality: SourceAgentInfo, Method: http.MethodPost, Path: "/api/v2/AgentInfo/search", TimeField: "createdTime", DataKey: "data", Inventory: true, EntityKey: "mid"},
	{Name: SourceAuditLogs, Functionality: SourceAuditLogs, Method: http.MethodPost, Path: "/api/v2/AuditLogs/search", TimeField: "createdTime", DataKey: "data", OrgLevel: true},
	{Name: SourceCloudActivities, Functionality: SourceCloudActivities, Method: http.MethodGet, Path: "/api/v2/CloudActivities", TimeField: "startTime", DataKey: "data"},
	{Name: SourceEdgeAuditEvents, Functionality: api.FunctionalityEdge, Method: http.MethodGet, Path: "/api/v1/audit_events", TimeField: "create_time", DataKey: "audit_events", Edge: true},
	{Name: SourceEdgeAlerts, Functionality: api.FunctionalityEdge, Method: http.MethodGet, Path: "/api/v1/alerts", TimeField: "create_time", DataKey: "alerts", Edge: true, Updates: true},
}

// Specs returns the specs of every source, core first, in a fixed order.
func Specs() []Spec { return append([]Spec(nil), specs[:]...) }

// SpecNames returns every source name in the order of Specs.
func SpecNames() []string {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return names
}

// LookupSpec returns the spec of the source called name.
func LookupSpec(name string) (Spec, bool) {
	for _, s := range specs {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// TakesFilters reports whether the source's first request carries the
// settings' filters and returns: a core search body (C3). The GET of
// cloud_activities takes only startTime and endTime, and the edge API only
// its own parameters (C6).
func (spec Spec) TakesFilters() bool { return !spec.Edge && spec.Method == http.MethodPost }
