package kafkarecord

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
)

// HeaderID is the header that holds the record id (C7) when the key is the
// record's entity (Encoder.EntityKeys): the id is then no longer the key.
const HeaderID = "id"

// entities is the entity each source's records are keyed by with
// Encoder.EntityKeys: the member of the record (a path, dots between
// levels) that names what a consumer orders or compacts by, within its
// account (EntityKey). Records of one entity go to one partition, in
// order, and a compacted topic keeps the latest record of each (the
// current state of an alert, of an agent).
var entities = map[string]string{
	"changed_files":     "mid",             // the host (agent) the file changed on
	"connections":       "srcEntityId.mid", // the host that opened the connection
	"dns":               "fqdn",            // the name asked
	"user_logins":       "username",        // the user
	"cloud_activities":  "eventType",       // the kind of activity
	"audit_logs":        "userName",        // who did it
	"agent_info":        "mid",             // the agent: compaction keeps its latest report
	"edge_audit_events": "user_login",      // the user
	"edge_alerts":       "uuid",            // the alert: compaction keeps its latest version
}

// Entity returns the member path source's records are keyed by with
// EntityKeys, "" for a source it does not know.
func Entity(source string) string { return entities[source] }

// EntitySources returns the sources that have an entity, sorted.
func EntitySources() []string { return slices.Sorted(maps.Keys(entities)) }

// EntityKey is the key of a record of account whose entity is entity:
// the account, '/', the entity. An entity is unique only within its
// account (the ClickHouse views group agents by account and mid, alerts
// by account and uuid): the same mid under two accounts is two agents, and
// on a compacted topic one must not erase the other. In the account '%'
// and '/' are written %25 and %2F, so the first '/' ends it and two
// different pairs never make one key. A later qualifier (the tenant)
// goes in front the same way (TenantEntityKey).
func EntityKey(account, entity string) string {
	return accountEscaper.Replace(account) + "/" + entity
}

// TenantEntityKey is EntityKey of a record of tenant (docs/tenants.md):
// the tenant, '/', then EntityKey, so that the same entity of two tenants
// sharing a topic never erases the other on compaction. Tenant "" (the
// one-tenant form) is EntityKey.
func TenantEntityKey(tenant, account, entity string) string {
	if tenant == "" {
		return EntityKey(account, entity)
	}
	return accountEscaper.Replace(tenant) + "/" + EntityKey(account, entity)
}

// accountEscaper writes '%' and '/' of an account as %25 and %2F
// (EntityKey).
var accountEscaper = strings.NewReplacer("%", "%25", "/", "%2F")

// EntityKeyOf returns the key of a record of source under account with
// EntityKeys: EntityKey of its account and its entity member; ok false
// when the source has no entity or the record no such member (the id is
// then the key).
func EntityKeyOf(source, account string, rec []byte) (key string, ok bool) {
	return TenantEntityKeyOf("", source, account, rec)
}

// TenantEntityKeyOf is EntityKeyOf for a record of tenant
// (TenantEntityKey).
func TenantEntityKeyOf(tenant, source, account string, rec []byte) (key string, ok bool) {
	e, ok := entityOf(source, rec)
	if !ok {
		return "", false
	}
	return TenantEntityKey(tenant, account, e), true
}

// entityOf returns the entity of a record of source: the member's string,
// or the text of a number or boolean; ok false when the record has no
// such member or it is null, an object or an array (the id is then the
// key).
func entityOf(source string, rec []byte) (string, bool) {
	path := entities[source]
	if path == "" {
		return "", false
	}
	v := json.RawMessage(rec)
	for _, name := range strings.Split(path, ".") {
		var obj map[string]json.RawMessage
		if json.Unmarshal(v, &obj) != nil {
			return "", false
		}
		var ok bool
		if v, ok = obj[name]; !ok {
			return "", false
		}
	}
	if len(v) == 0 {
		return "", false
	}
	switch v[0] {
	case '"':
		var s string
		if json.Unmarshal(v, &s) != nil || s == "" {
			return "", false
		}
		return s, true
	case '{', '[', 'n':
		return "", false
	}
	return string(v), true
}
