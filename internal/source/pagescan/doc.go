// Package pagescan classifies the answers of a search or list request
// (CONTRACT C3, C5, C6): only a 204 or a 200 holding a well-formed page is
// a result; every other answer is an error, never an empty window. It
// walks a body once and slices the records out of it without decoding or
// copying them (Body.Records are sub-slices of the body).
//
// It owns only that scanner. It imports api for the error class the
// client retries (api.ErrMalformedPage) and nothing else of the
// collector; it knows neither windows nor envelopes.
package pagescan
