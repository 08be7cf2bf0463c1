package catalog

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/recheck"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/window"
)

// Day is 24 hours; the API states its limits in days (CONTRACT C3).
const Day = 24 * time.Hour

// MaxWindowLimit is the longest window the core API accepts (C3: 7 days).
const MaxWindowLimit = 7 * Day

// Config is the configuration this package owns. The top-level loader puts
// its parts under the keys api, accounts, org_audit_logs, edge and sources.
type Config struct {
	// Tenant names the platform tenant these sources read for: an entry
	// of `tenants:`, "" for the one-tenant form (the top-level api, edge
	// and accounts). It is every stream's record.Stream.Tenant.
	Tenant string `koanf:"-"`
	// API is the core API (CONTRACT C1-C5).
	API api.Config `koanf:"api"`
	// Accounts are the sub-accounts to read (C2). Empty means the token's own
	// account: no Account-Name header, envelope account "default".
	Accounts []string `koanf:"accounts"`
	// OrgAuditLogs also pulls organization-level audit logs with
	// Org-Access: true, envelope account "org" (C2). Default false.
	OrgAuditLogs bool `koanf:"org_audit_logs"`
	// Edge is the edge API (C6); off while Edge.BaseURL is empty.
	Edge EdgeConfig `koanf:"edge"`
	// Sources holds a "default" block and per-source overrides.
	Sources SourcesConfig `koanf:"sources"`
}

// EdgeConfig is the koanf section "edge" (CONTRACT C6): the edge streams'
// own keys and, handed to the API client through Connection, the
// connection to the edge API. Edge sources are off while BaseURL is empty.
type EdgeConfig struct {
	// BaseURL of the edge API; empty turns the edge sources off.
	BaseURL string `koanf:"base_url"`
	// Token is the edge bearer token; it wins over TokenFile.
	Token secret.Secret `koanf:"token"`
	// TokenFile holds the token; the client reads it again whenever the
	// edge API refuses the token (api.EdgeConfig.TokenFile).
	TokenFile string `koanf:"token_file"`
	// MaxRows is the most rows the edge API returns; a response that full is
	// taken as truncated. Default 10000.
	MaxRows int `koanf:"max_rows"`
	// AlertStatusFilter is sent as status_filter. Default
	// "OPEN,IN_PROGRESS,CLOSED".
	AlertStatusFilter string `koanf:"alert_status_filter"`
	// AlertUpdateLookback is the trailing period re-asked for alert
	// updates. Default 24h; 0 turns the re-ask off.
	AlertUpdateLookback time.Duration `koanf:"alert_update_lookback"`
	// AlertFollow is how long after its creation an alert is still
	// followed for updates, past the lookback, at a bounded cost
	// (recheck.FollowWindows): every AlertFollowInterval the alerts
	// created in [now - AlertFollow, now - lookback) are asked again.
	// Default 168h (7 days); 0 (or not more than the lookback) turns
	// following off.
	AlertFollow         time.Duration `koanf:"alert_follow"`
	AlertFollowInterval time.Duration `koanf:"alert_follow_interval"`
	// Timeout bounds one request. Default 125s.
	Timeout time.Duration `koanf:"timeout"`
	// Rate is the edge bucket; limits are unpublished, default 480/1h.
	Rate api.RateConfig `koanf:"rate"`
	// Account is the envelope account of an edge record without an
	// account_name member, and the account of the edge streams in the
	// checkpoint: each edge source is one stream per edge token, whatever
	// the sub-accounts (C6 has no account selection). Default "edge".
	Account string `koanf:"account"`
	// Accounts is a removed key: edge streams were once read per
	// sub-account, but the edge API has no account selection (C6), so each
	// read brought every record again. A non-empty list is a configuration
	// error that says so.
	Accounts []string `koanf:"accounts"`
	// AllowedOrigins lists the origins, besides base_url's, that may
	// receive the edge token, as api.allowed_origins does for the core
	// API. Default empty: redirects to another origin, and from https to
	// http, are refused.
	AllowedOrigins []string `koanf:"allowed_origins"`
}

// DefaultEdgeAccount is edge.account's default.
const DefaultEdgeAccount = "edge"

// Connection returns the part of the section the edge API client reads.
func (c EdgeConfig) Connection() api.EdgeConfig {
	return api.EdgeConfig{
		BaseURL: c.BaseURL, Token: c.Token, TokenFile: c.TokenFile,
		Timeout: c.Timeout, Rate: c.Rate, AllowedOrigins: c.AllowedOrigins,
	}
}

// Filter is one search filter passed verbatim to the search body (C3).
type Filter struct {
	Expression string   `koanf:"expression" json:"expression"`
	Field      string   `koanf:"field" json:"field"`
	Value      string   `koanf:"value" json:"value,omitempty"`
	Values     []string `koanf:"values" json:"values,omitempty"`
}

// SourceOverride is the configuration block of one source or of the
// "default" block. Nil fields inherit: a source inherits from "default",
// which inherits from DefaultSource.
type SourceOverride struct {
	Enabled *bool `koanf:"enabled"`
	// Start is where a stream without checkpoint begins: a duration back
	// from now ("48h", "7d") or an RFC 3339 time.
	Start *string        `koanf:"start"`
	Lag   *time.Duration `koanf:"lag"`
	// Interval is "auto" (the default: polls as often as the stream's
	// share of its rate budget allows) or a duration; see Interval.
	Interval  *Interval      `koanf:"interval"`
	MaxWindow *time.Duration `koanf:"max_window"`
	Overlap   *time.Duration `koanf:"overlap"`
	Filters   []Filter       `koanf:"filters"`
	Returns   []string       `koanf:"returns"`
	// Recheck are the recheck points after a window's end at which its
	// count is asked again for late records (C3): "auto" (the default)
	// learns them from the platform's delays; an empty list turns
	// rechecks off. RecheckHorizon is how long a window stays in the log
	// (0: the last point plus 1h); RecheckShare the most of each
	// functionality's budget rechecks spend. See package recheck.
	Recheck        *[]RecheckPoint `koanf:"recheck"`
	RecheckHorizon *time.Duration  `koanf:"recheck_horizon"`
	RecheckShare   *float64        `koanf:"recheck_share"`
	// Inventory is how a source whose records are entity states
	// (agent_info) is also read as an inventory: "changed" (its default)
	// walks the current entities every InventoryInterval and delivers
	// those whose state changed since the last walk, "all" delivers every
	// one at every walk, "off" reads the source by its windows only.
	// Only such a source takes it in its own block; set in the "default"
	// block, the other sources ignore it. InventoryInterval defaults to 1h.
	Inventory         *string        `koanf:"inventory"`
	InventoryInterval *time.Duration `koanf:"inventory_interval"`
}

// SourcesConfig maps "default" and source names to their blocks.
type SourcesConfig map[string]SourceOverride

// DefaultSourcesKey is the key of the block every source inherits from.
const DefaultSourcesKey = "default"

// SourceSettings is the resolved configuration of one source.
type SourceSettings struct {
	Enabled bool
	Start   string
	Lag     time.Duration
	// Interval is the configured poll interval; 0 (IntervalAuto) learns
	// it from the budget (package source, Poller's cadence).
	Interval  time.Duration
	MaxWindow time.Duration
	Overlap   time.Duration
	Filters   []Filter
	Returns   []string
	// Recheck, RecheckHorizon and RecheckShare: see SourceOverride.
	Recheck        []RecheckPoint
	RecheckHorizon time.Duration
	RecheckShare   float64
	// Inventory and InventoryInterval: see SourceOverride.
	Inventory         InventoryMode
	InventoryInterval time.Duration
}

// InventoryMode says how a source is read as an inventory (see
// SourceOverride.Inventory).
type InventoryMode string

// The inventory modes.
const (
	// InventoryChanged delivers the entities whose state changed since
	// the last walk (the default of agent_info).
	InventoryChanged InventoryMode = "changed"
	// InventoryAll delivers every entity at every walk.
	InventoryAll InventoryMode = "all"
	// InventoryOff reads no inventory (the only mode of other sources).
	InventoryOff InventoryMode = "off"
)

// DefaultInventoryInterval is inventory_interval's default: one walk an
// hour costs ceil(agents / page_rows) requests, one for up to 5,000
// agents (C3, C4: 480 an hour).
const DefaultInventoryInterval = time.Hour

// ReadsInventory reports whether the settings read an inventory.
func (r SourceSettings) ReadsInventory() bool {
	return r.Inventory == InventoryChanged || r.Inventory == InventoryAll
}

// RecheckConfig returns the recheck configuration of the settings, with
// the edge API's max_rows (C6).
func (r SourceSettings) RecheckConfig(edgeMaxRows int) recheck.Config {
	c := recheckConfig(r.Recheck)
	c.Horizon = r.RecheckHorizon
	c.Share = r.RecheckShare
	if edgeMaxRows > 0 {
		c.EdgeMaxRows = int64(edgeMaxRows)
	}
	return c
}

// DefaultSource returns the built-in source settings: enabled, start 24h
// back, lag 30s, interval auto (from the budget), max_window 7 days, no overlap, recheck
// points learnt (auto) with 10% of the budget, no inventory (Resolve reads
// agent_info as one, inventory_interval 1h).
func DefaultSource() SourceSettings {
	return SourceSettings{
		Enabled:      true,
		Start:        "24h",
		Lag:          30 * time.Second,
		Interval:     time.Duration(IntervalAuto),
		MaxWindow:    MaxWindowLimit,
		Recheck:      AutoPoints(),
		RecheckShare: recheck.DefaultShare,
		// Resolve turns it on for an inventory source (agent_info).
		Inventory:         InventoryOff,
		InventoryInterval: DefaultInventoryInterval,
	}
}

// DefaultEdgeConfig returns the edge defaults of CONTRACT C6.
func DefaultEdgeConfig() EdgeConfig {
	conn := api.DefaultEdgeConfig()
	return EdgeConfig{
		Account:             DefaultEdgeAccount,
		MaxRows:             10000,
		AlertStatusFilter:   "OPEN,IN_PROGRESS,CLOSED",
		AlertUpdateLookback: 24 * time.Hour,
		AlertFollow:         7 * Day,
		AlertFollowInterval: time.Hour,
		Timeout:             conn.Timeout,
		Rate:                conn.Rate,
	}
}

// DefaultConfig returns the whole configuration with its defaults; the
// "default" sources block is filled so a dump shows every default.
func DefaultConfig() Config {
	d := DefaultSource()
	// The inventory as agent_info resolves it (the other sources ignore
	// the default block's).
	inv := string(InventoryChanged)
	every := Interval(d.Interval)
	return Config{
		API:  api.DefaultConfig(),
		Edge: DefaultEdgeConfig(),
		Sources: SourcesConfig{DefaultSourcesKey: {
			Enabled: &d.Enabled, Start: &d.Start, Lag: &d.Lag, Interval: &every,
			MaxWindow: &d.MaxWindow, Overlap: &d.Overlap,
			Recheck: &d.Recheck, RecheckHorizon: &d.RecheckHorizon, RecheckShare: &d.RecheckShare,
			Inventory: &inv, InventoryInterval: &d.InventoryInterval,
		}},
	}
}

// Resolve merges the built-in defaults, the "default" block and the block
// of source name, in that order; unset fields inherit.
//
// Inventory applies to a source that is an inventory (Spec.Inventory:
// agent_info) only, where it defaults to "changed"; any other source
// resolves to "off" whatever the "default" block says (its own block may
// not set it: Validate says so).
func (s SourcesConfig) Resolve(name string) SourceSettings {
	r := DefaultSource()
	spec, _ := LookupSpec(name)
	if spec.Inventory {
		r.Inventory = InventoryChanged
	}
	r.apply(s[DefaultSourcesKey])
	if name != DefaultSourcesKey {
		r.apply(s[name])
	}
	if !spec.Inventory && name != DefaultSourcesKey {
		r.Inventory = InventoryOff
	}
	return r
}

func (r *SourceSettings) apply(o SourceOverride) {
	if o.Enabled != nil {
		r.Enabled = *o.Enabled
	}
	if o.Start != nil {
		r.Start = *o.Start
	}
	if o.Lag != nil {
		r.Lag = *o.Lag
	}
	if o.Interval != nil {
		r.Interval = time.Duration(*o.Interval)
	}
	if o.MaxWindow != nil {
		r.MaxWindow = *o.MaxWindow
	}
	if o.Overlap != nil {
		r.Overlap = *o.Overlap
	}
	if o.Filters != nil {
		r.Filters = slices.Clone(o.Filters)
	}
	if o.Returns != nil {
		r.Returns = slices.Clone(o.Returns)
	}
	if o.Recheck != nil {
		r.Recheck = slices.Clone(*o.Recheck)
	}
	if o.RecheckHorizon != nil {
		r.RecheckHorizon = *o.RecheckHorizon
	}
	if o.RecheckShare != nil {
		r.RecheckShare = *o.RecheckShare
	}
	if o.Inventory != nil {
		r.Inventory = InventoryMode(*o.Inventory)
	}
	if o.InventoryInterval != nil {
		r.InventoryInterval = *o.InventoryInterval
	}
}

// StartTime returns where a stream without checkpoint begins at now: Start
// is a duration back ("48h", "7d"), "max", or an RFC 3339 time or a date;
// see window.Planner.Start. It is clamped to the API's default max history.
func (r SourceSettings) StartTime(now time.Time) (time.Time, error) {
	t, _, err := window.Planner{}.Start(r.Start, now)
	return t, err
}

// Validate checks the whole configuration and names each bad key by its full
// path; all problems are joined.
func (c Config) Validate() error {
	var errs []error
	errs = append(errs, c.API.Validate())
	for i, a := range c.Accounts {
		if err := checkAccount(a); err != nil {
			errs = append(errs, fmt.Errorf("accounts[%d]: %w", i, err))
		}
	}
	if len(c.Edge.Accounts) > 0 {
		errs = append(errs, errors.New("edge.accounts: removed: the edge API has no account selection (CONTRACT C6), "+
			"the edge token alone decides what it returns, so reading it once per sub-account fetched and delivered "+
			"every edge record once per sub-account; delete the key: each edge source is read once per token and each "+
			"record keeps its account (account_name)"))
	}
	if c.Edge.BaseURL != "" {
		errs = append(errs, c.Edge.validate("edge")...)
	}
	errs = append(errs, c.Sources.validate("sources")...)
	errs = append(errs, c.validateRequests("sources")...)
	return errors.Join(errs...)
}

// validateRequests checks what the sources' settings make of their
// requests: filters and returns only where the endpoint takes them (a core
// search body, C3), and a search body within api.max_request_bytes (C5:
// larger is 400, on every window, for good). Each error names the key the
// setting came from: the source's block or, when inherited, "default".
func (c Config) validateRequests(p string) []error {
	var errs []error
	// The longest body of any window: both times in the milliseconds form.
	w := window.Window{Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}
	for _, spec := range Specs() {
		r := c.Sources.Resolve(spec.Name)
		if !r.Enabled || (spec.Edge && c.Edge.BaseURL == "") {
			continue
		}
		block := func(own bool) string {
			if own {
				return spec.Name
			}
			return DefaultSourcesKey
		}
		fkey := fmt.Sprintf("%s.%s.filters", p, block(c.Sources[spec.Name].Filters != nil))
		rkey := fmt.Sprintf("%s.%s.returns", p, block(c.Sources[spec.Name].Returns != nil))
		if !spec.TakesFilters() {
			why := "its endpoint is a GET that takes only startTime and endTime (C3)"
			if spec.Edge {
				why = "the edge API takes only start_time, end_time and status_filter (C6)"
			}
			if len(r.Filters) > 0 {
				errs = append(errs, fmt.Errorf("%s: %s cannot take filters: %s; they would be ignored (set filters per source, or disable %s)",
					fkey, spec.Name, why, spec.Name))
			}
			if len(r.Returns) > 0 {
				errs = append(errs, fmt.Errorf("%s: %s cannot take returns: %s; they would be ignored (set returns per source, or disable %s)",
					rkey, spec.Name, why, spec.Name))
			}
			continue
		}
		_, body, err := spec.FirstPage(w, r, c.Edge)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", fkey, err))
			continue
		}
		if limit := c.API.MaxRequestBytes; limit > 0 && int64(len(body)) > limit {
			key := fkey
			if len(r.Filters) == 0 {
				key = rkey
			}
			errs = append(errs, fmt.Errorf("%s: the search body of %s is %d bytes, over api.max_request_bytes (%d; C5: a larger body is refused with 400 on every window)",
				key, spec.Name, len(body), limit))
		}
	}
	return errs
}

// validate checks the section: the connection's keys (api.EdgeConfig),
// then the streams' own.
func (c EdgeConfig) validate(p string) []error {
	errs := []error{c.Connection().Validate()}
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", p, key, fmt.Sprintf(format, args...)))
	}
	if c.MaxRows <= 0 {
		add("max_rows", "must be positive")
	}
	if strings.TrimSpace(c.AlertStatusFilter) == "" {
		add("alert_status_filter", "must be set")
	}
	if c.AlertUpdateLookback < 0 {
		add("alert_update_lookback", "must not be negative")
	}
	if c.AlertFollow < 0 {
		add("alert_follow", "must not be negative")
	}
	if c.AlertFollow > c.AlertUpdateLookback && c.AlertFollowInterval <= 0 {
		add("alert_follow_interval", "must be positive while alert_follow is set")
	}
	if err := checkAccount(c.Account); err != nil {
		add("account", "%v", err)
	}
	return errs
}

func (s SourcesConfig) validate(p string) []error {
	var errs []error
	names := make([]string, 0, len(s))
	for name := range s {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if name != DefaultSourcesKey {
			if _, ok := LookupSpec(name); !ok {
				errs = append(errs, fmt.Errorf("%s.%s: unknown source (known: %s)", p, name, strings.Join(SpecNames(), ", ")))
				continue
			}
		}
		errs = append(errs, s.Resolve(name).validate(p+"."+name)...)
		errs = append(errs, s.validateInventory(p, name)...)
	}
	// returns must keep the record time field, or no record could be
	// filed in its window (C3).
	for _, spec := range Specs() {
		r := s.Resolve(spec.Name)
		if len(r.Returns) == 0 || slices.Contains(r.Returns, spec.TimeField) {
			continue
		}
		key := spec.Name
		if s[spec.Name].Returns == nil {
			key = DefaultSourcesKey
		}
		errs = append(errs, fmt.Errorf("%s.%s.returns: must include %s, the record time of %s", p, key, spec.TimeField, spec.Name))
	}
	return errs
}

func (r SourceSettings) validate(p string) []error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", p, key, fmt.Sprintf(format, args...)))
	}
	if _, err := r.StartTime(time.Now()); err != nil {
		add("start", "%v", err)
	}
	if r.Lag < 0 {
		add("lag", "must not be negative")
	}
	if r.Interval < 0 {
		add("interval", "must be auto or positive")
	}
	switch {
	case r.MaxWindow <= 0:
		add("max_window", "must be positive")
	case r.MaxWindow > MaxWindowLimit:
		add("max_window", "must be at most 7 days (168h), the API's limit")
	}
	if r.Overlap < 0 {
		add("overlap", "must not be negative")
	}
	if err := validatePoints(r.Recheck); err != nil {
		errs = append(errs, fmt.Errorf("%s.%w", p, err))
	} else if err := r.RecheckConfig(0).Validate(); err != nil {
		for _, e := range flatten(err) {
			errs = append(errs, fmt.Errorf("%s.%w", p, e))
		}
	}
	for i, f := range r.Filters {
		if err := f.validate(); err != nil {
			add(fmt.Sprintf("filters[%d]", i), "%v", err)
		} else if err := f.checkBetween(); err != nil {
			add(fmt.Sprintf("filters[%d].values", i), "%v", err)
		}
	}
	return errs
}

// validateInventory checks the inventory keys of block name: only a
// source that is an inventory (agent_info) takes them, in its own block
// or in the "default" block (which the other sources ignore).
func (s SourcesConfig) validateInventory(p, name string) []error {
	o := s[name]
	if o.Inventory == nil && o.InventoryInterval == nil {
		return nil
	}
	spec, _ := LookupSpec(name)
	if !spec.Inventory && name != DefaultSourcesKey {
		var which []string
		for _, sp := range Specs() {
			if sp.Inventory {
				which = append(which, sp.Name)
			}
		}
		key := "inventory"
		if o.Inventory == nil {
			key = "inventory_interval"
		}
		return []error{fmt.Errorf("%s.%s.%s: only %s can be read as an inventory; set it in that source's block",
			p, name, key, strings.Join(which, ", "))}
	}
	var errs []error
	r := s.Resolve(name)
	switch r.Inventory {
	case InventoryChanged, InventoryAll, InventoryOff:
	default:
		errs = append(errs, fmt.Errorf("%s.%s.inventory: unknown mode %q (changed, all or off)", p, name, r.Inventory))
	}
	if r.ReadsInventory() && r.InventoryInterval < time.Minute {
		errs = append(errs, fmt.Errorf("%s.%s.inventory_interval: must be at least 1m (it is %s): every walk spends the source's rate budget (C4)", p, name, r.InventoryInterval))
	}
	return errs
}

// filterOperands says which operand each expression takes (seed, C3).
var filterOperands = map[string]string{
	"eq": "value", "ne": "value", "like": "value", "not_like": "value",
	"ilike": "value", "not_ilike": "value", "rlike": "value", "not_rlike": "value",
	"gt": "value", "lt": "value", "ge": "value", "le": "value",
	"in": "values", "not_in": "values", "between": "between",
}

func (f Filter) validate() error {
	op, ok := filterOperands[f.Expression]
	if !ok {
		return fmt.Errorf("unknown expression %q", f.Expression)
	}
	if f.Field == "" {
		return errors.New("field must be set")
	}
	switch op {
	case "value":
		if len(f.Values) > 0 {
			return fmt.Errorf("%s takes value, not values", f.Expression)
		}
	case "values":
		if f.Value != "" || len(f.Values) == 0 {
			return fmt.Errorf("%s takes a non-empty values list, not value", f.Expression)
		}
	case "between":
		if f.Value != "" || len(f.Values) != 2 {
			return errors.New("between takes values with exactly two boundaries")
		}
	}
	return nil
}

// checkAccount checks a sub-account name, which is sent as the
// Account-Name header (C2) and used as a label: a control character (a
// newline) would inject a header or break a label.
func checkAccount(a string) error {
	switch {
	case strings.TrimSpace(a) == "":
		return errors.New("must not be empty")
	case strings.TrimSpace(a) != a:
		return fmt.Errorf("%q has leading or trailing spaces", a)
	case strings.ContainsFunc(a, unicode.IsControl):
		return fmt.Errorf("%q holds a control character", a)
	}
	return nil
}

// flatten returns the errors joined in err, one each.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
