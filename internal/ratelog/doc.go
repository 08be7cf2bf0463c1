// Package ratelog writes warnings that may repeat at a high rate (a retry
// per request, a flawed record per row) at most once per interval for each
// stream and kind, counting the lines it held back.
//
// It owns only that limiter. It is a bottom floor: it imports nothing of
// the project, so that the API client and the pollers, which both warn
// through it, may share it.
package ratelog
