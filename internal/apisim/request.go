package apisim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"time"
)

// query is a validated search: the window in Unix milliseconds, the filters
// and the top-level fields to return (nil: all). filtersRaw and returnsRaw
// keep the members as sent (compacted) so that next-page tokens can carry
// them.
type query struct {
	start, end int64
	filters    []filter
	returns    []string
	filtersRaw []byte
	returnsRaw []byte
	// noTime is set when the search had no timeFilter (the default
	// range): an agent_info search then answers the fleet.
	noTime bool
}

// windowRules are the time-range rules of C3.
type windowRules struct {
	defaultRange, maxRange, maxHistory time.Duration
}

func (c *Config) windowRules() windowRules {
	return windowRules{defaultRange: c.DefaultRange, maxRange: c.MaxRange, maxHistory: c.MaxHistory}
}

// parseSearchBody validates a POST search body for source si (seed: "Core:
// activity searches"; C3). All parts are optional; an empty body is {}.
// Unknown members, wrong types and times outside the two allowed forms are
// errors.
func parseSearchBody(body []byte, si *sourceInfo, now time.Time, rules windowRules) (query, error) {
	var m map[string]json.RawMessage
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &m); err != nil {
			return query{}, fmt.Errorf("the body is not a JSON object: %w", err)
		}
		if m == nil {
			return query{}, fmt.Errorf("the body must be a JSON object")
		}
	}
	for k := range m {
		switch k {
		case "timeFilter", "filters", "returns":
		default:
			return query{}, fmt.Errorf("unknown member %q in the search body", k)
		}
	}
	var startS, endS *string
	if raw, ok := m["timeFilter"]; ok && string(raw) != "null" {
		var tf map[string]json.RawMessage
		if err := json.Unmarshal(raw, &tf); err != nil || tf == nil {
			return query{}, fmt.Errorf("timeFilter must be an object with startTime and endTime")
		}
		for k, v := range tf {
			var s string
			if err := jsonString(v, &s); err != nil {
				return query{}, fmt.Errorf("timeFilter.%s %w", k, err)
			}
			switch k {
			case "startTime":
				startS = &s
			case "endTime":
				endS = &s
			default:
				return query{}, fmt.Errorf("unknown member %q in timeFilter", k)
			}
		}
	}
	q, err := resolveWindow(startS, endS, now, rules)
	if err != nil {
		return query{}, err
	}
	q.noTime = startS == nil && endS == nil
	if q.filters, err = parseFilters(m["filters"], si); err != nil {
		return query{}, err
	}
	if q.returns, err = parseReturns(m["returns"], si); err != nil {
		return query{}, err
	}
	if len(q.filters) > 0 {
		q.filtersRaw = compact(m["filters"])
	}
	if q.returns != nil {
		q.returnsRaw = compact(m["returns"])
	}
	return q, nil
}

func compact(raw []byte) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return append([]byte(nil), raw...)
	}
	return b.Bytes()
}

// parseReturns validates "returns": an array of top-level field names of
// the source. An empty or missing list returns every field.
func parseReturns(raw json.RawMessage, si *sourceInfo) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	names, err := stringArray(raw)
	if err != nil {
		return nil, fmt.Errorf("returns must be an array of field names")
	}
	if len(names) == 0 {
		return nil, nil
	}
	for _, n := range names {
		if !si.hasField(n) {
			return nil, fmt.Errorf("returns: %q is not a top-level field of %s records", n, si.name)
		}
	}
	return names, nil
}

// parseCloudActivitiesQuery validates the query string of GET
// CloudActivities: startTime and endTime only, each at most once.
func parseCloudActivitiesQuery(v url.Values, now time.Time, rules windowRules) (query, error) {
	var startS, endS *string
	for k, vs := range v {
		if len(vs) != 1 {
			return query{}, fmt.Errorf("query parameter %s must be given once", k)
		}
		s := vs[0]
		switch k {
		case "startTime":
			startS = &s
		case "endTime":
			endS = &s
		default:
			return query{}, fmt.Errorf("unknown query parameter %q", k)
		}
	}
	return resolveWindow(startS, endS, now, rules)
}

// resolveWindow applies C3's time rules: without endTime the window ends
// now, an endTime in the future is read as now, without startTime the
// window is the default range before its end; startTime >= endTime, a range
// over max_range and a start before now - max_history are errors.
func resolveWindow(startS, endS *string, now time.Time, rules windowRules) (query, error) {
	nowMs := now.UnixMilli()
	end := nowMs
	if endS != nil {
		t, err := parseAPITime(*endS)
		if err != nil {
			return query{}, fmt.Errorf("endTime %q: %w", *endS, err)
		}
		end = min(t.UnixMilli(), nowMs)
	}
	start := end - rules.defaultRange.Milliseconds()
	if startS != nil {
		t, err := parseAPITime(*startS)
		if err != nil {
			return query{}, fmt.Errorf("startTime %q: %w", *startS, err)
		}
		start = t.UnixMilli()
	}
	if start >= end {
		return query{}, fmt.Errorf("startTime must be before endTime (a future endTime is read as now)")
	}
	if rules.maxRange > 0 && end-start > rules.maxRange.Milliseconds() {
		return query{}, fmt.Errorf("the time range is over the maximum of %s", rules.maxRange)
	}
	if rules.maxHistory > 0 && start < nowMs-rules.maxHistory.Milliseconds() {
		return query{}, fmt.Errorf("startTime is more than %s in the past", rules.maxHistory)
	}
	return query{start: start, end: end}, nil
}
