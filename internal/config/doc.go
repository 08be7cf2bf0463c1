// Package config loads the collector's configuration: defaults, then a YAML
// file, then environment variables (COLLECTOR_ + the key path in upper case
// with __ between levels, e.g. COLLECTOR_API__SECRET), then one validation
// whose every message names the key that is wrong. Each package owns its own
// section (its Config type, defaults and Validate: api.Config, the sections
// of package catalog, pipeline.Config, the sinks'); this package composes
// them, and only cmd/ and the assembly (internal/app) import it. It does not
// know the API simulator: internal/app checks and applies simulator.settings.
// COLLECTOR_CONFIG (ConfigPathEnv) names the file for the command line and
// is no key.
//
// tenants: lists the platform tenants one collector serves, each with its
// own api, edge, accounts and sources overrides (TenantConfig; errors name
// the entry, tenants[3].api.key_id); it and the top-level one-tenant form
// exclude each other. shard: (ForShard) cuts the list down to the tenants
// a shard owns by rendezvous hashing (package shard); a shard that owns
// none gets an empty list, never read as the one-tenant form (Sharding
// says so, and the app runs it idle).
package config
