// Package source pulls records from the platform: the API client (tokens,
// account headers, timeouts, retries), the rate budget shared per user and
// functionality (CONTRACT C4), the paging of result sets (C3, C6) and one
// poller per account and source that turns pages into batches of envelopes.
//
// It never imports the sinks or the checkpoint: the pipeline hands a poller
// its Cursor at start and receives Pages through an Emit function, each page
// describing the cursor that holds once it is delivered.
package source
