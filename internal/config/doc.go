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
package config
