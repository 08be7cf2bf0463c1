// Package catalog describes what the collector can read and what its
// configuration asks it to read: the table of the platform's sources
// (Spec, CONTRACT C3 and C6), how each asks the API for a window
// (Spec.FirstPage), the koanf sections accounts, org_audit_logs, edge and
// sources (Config, EdgeConfig, SourcesConfig, with their defaults and
// Validate), the stand-ins for credentials that something else provides
// (Endpoints), and the window planner of a source (NewPlanner).
//
// It owns that description only: it makes no request and starts nothing.
// It imports api (the section api and the edge connection it hands over)
// and window; never the pollers, a sink, the checkpoint or the pipeline.
package catalog
