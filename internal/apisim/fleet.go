package apisim

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// The fleet: each account's current agents, what an agent_info search
// without timeFilter answers (the collector's inventory walk). The seed
// lists agents only through AgentInfo/search, whose default range is the
// 24 hours before now; the simulator answers it with every agent of the
// account in its state as of the first page (the chain sees the fleet as
// of then, C3), paged like any search. Filters and returns are checked but
// not applied to the fleet.
//
// Agent i of an account has mid fleetMidBase+i, a fixed createdTime (its
// enrolment) and a state (status, tags.team, agentVersion, lastUpdate)
// that changes at its own moments: every period_i, a per-agent length
// between half and one and a half FleetChange, from a per-agent phase.
// lastUpdate is the moment of the last change. Everything is a pure
// function of (seed, account, i, time), so the same simulator answers
// the same fleet, and a test asks Fleet for the truth.
//
// The fleet's mids are apart from the machines of the windowed agent_info
// records (1000 to 1239), whose states are random per record: an inventory
// then holds one truth per agent.

// fleetMidBase is the mid of a fleet's first agent.
const fleetMidBase = 100000

const saltFleet = 0x1f83d9abfb41bd6b

// fleetEpoch is before every agent's enrolment: createdTime is up to a
// year before it.
var fleetEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

// FleetAgent is one agent of an account's fleet as of a time.
type FleetAgent struct {
	// Mid is the agent's machine id.
	Mid int64
	// Status is ACTIVE or INACTIVE.
	Status string
	// LastUpdate is when its state last changed.
	LastUpdate time.Time
	// Record is the agent_info record the simulator serves for it.
	Record []byte
}

// fleetRecord is an agent_info record of the fleet, members in the seed's
// order.
type fleetRecord struct {
	AgentVersion string            `json:"agentVersion"`
	CreatedTime  string            `json:"createdTime"`
	Hostname     string            `json:"hostname"`
	IPAddr       string            `json:"ipAddr"`
	LastUpdate   string            `json:"lastUpdate"`
	Mid          int64             `json:"mid"`
	Mode         string            `json:"mode"`
	OS           string            `json:"os"`
	Status       string            `json:"status"`
	Tags         map[string]string `json:"tags"`
}

// Fleet returns the agents of account as of at, in the order served (by
// mid); none when the account is unknown or the fleet is off
// (Config.FleetAgents 0).
func (s *Server) Fleet(account string, at time.Time) []FleetAgent {
	acct, ok := s.accountName(account)
	if !ok {
		return nil
	}
	out := make([]FleetAgent, s.cfg.FleetAgents)
	for i := range out {
		out[i] = s.fleetAgent(acct, i, at.UnixMilli())
	}
	return out
}

// fleetAgent is agent i of account acct as of atMs.
func (s *Server) fleetAgent(acct string, i int, atMs int64) FleetAgent {
	h := mix64(hashString(uint64(s.cfg.Seed)^saltFleet, acct) ^ uint64(i)*golden)
	mid := int64(fleetMidBase + i)
	change := max(s.cfg.FleetChange.Milliseconds(), 1)
	period := max(change/2+int64(unit(mix64(h+1))*float64(change)), 1)
	phase := int64(unit(mix64(h+2)) * float64(period))
	v := floorDiv(atMs-phase, period)
	last := phase + v*period
	x := rnd{s: mix64(h ^ uint64(v)*saltUpd)}
	status := [...]string{"ACTIVE", "ACTIVE", "ACTIVE", "INACTIVE"}[x.n(4)]
	host := string(appendHostname(nil, mid))
	r := fleetRecord{
		AgentVersion: "6." + strconv.FormatInt(floorDiv(v, 8)%8+8, 10) + ".0-" + strconv.Itoa(1000+int(h%9000)),
		CreatedTime:  time.UnixMilli(fleetEpoch - int64(h%(365*24*3600*1000))).UTC().Format("2006-01-02T15:04:05.000Z"),
		Hostname:     host,
		IPAddr:       string(appendMachineIP(nil, mid)),
		LastUpdate:   time.UnixMilli(last).UTC().Format("2006-01-02T15:04:05.000Z"),
		Mid:          mid,
		Mode:         [...]string{"normal", "ebpf"}[h>>8&1],
		OS:           osNames[mid%int64(len(osNames))],
		Status:       status,
		Tags:         map[string]string{"Name": host, "env": envNames[mid%3], "team": teamNames[x.n(len(teamNames))]},
	}
	b, _ := json.Marshal(r) // strings and a map of strings: never fails
	return FleetAgent{Mid: mid, Status: status, LastUpdate: time.UnixMilli(last).UTC(), Record: b}
}

// fleetChain marks a chain of the fleet: it has no window.
const fleetChain = -1

// serveFleet writes page ch.page of the fleet of ch.account as of ch.snap
// (see Fleet) and, unless it is the last, a next-page URL.
func (s *Server) serveFleet(w http.ResponseWriter, r *http.Request, ch *chain) {
	si := ch.src.info()
	n := int64(s.cfg.FleetAgents)
	if n == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	ch.total = n
	end := min(ch.cursor+int64(s.cfg.PageSize), n)
	data := []byte(`[`)
	for i := ch.cursor; i < end; i++ {
		if i > ch.cursor {
			data = append(data, ',')
		}
		data = append(data, s.fleetAgent(ch.account, int(i), ch.snap).Record...)
	}
	data = append(data, ']')
	rows := end - ch.cursor
	ch.cursor, ch.served = end, ch.served+rows
	ch.page++
	h := []byte(`{"paging":{"rows":`)
	h = strconv.AppendInt(h, rows, 10)
	h = append(h, `,"totalRows":`...)
	h = strconv.AppendInt(h, n, 10)
	h = append(h, `,"urls":{`...)
	if end < n {
		h = s.appendNextPage(h, r, si, ch)
	}
	h = append(h, `}},"data":`...)
	s.stats.add(ch.user, si.name, func(c *Counter) { c.RowsServed += rows; c.Pages++ })
	s.sendData(w, r, h, data, []byte("}"))
}
