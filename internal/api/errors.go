package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/svcexport/collector/internal/api/origin"
)

// StatusError is an HTTP error answer of the API that is not repeated
// unchanged (CONTRACT C5: 400, 403, 404, 405, 409 and other 4xx), or a 401:
// permanent from the token endpoint (the key refused, C1) or on the edge
// token (C6); on a data request with a core token it is the error of that
// request, retried, and seen only when the request gives up after
// api.retry.max_attempts. The poller inspects it with errors.As; a
// next-page 404 (C3: expired chain) has NextPage set.
type StatusError struct {
	// Status is the HTTP status code.
	Status int
	// Message is the API's error message, shortened; it never holds a
	// credential (the client redacts them).
	Message string
	// NextPage is set when the failed request was a next-page GET.
	NextPage bool
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("HTTP %d %s", e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// PermanentError marks an error that repeating the request unchanged does
// not cure: a 4xx answer, a credential the token endpoint refuses (C1) or
// a refused edge token (C6), a body over the size limit. A 401 on a data
// request with a core token is never one: the token died, not the key.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *PermanentError) Unwrap() error { return e.Err }

// IsPermanent reports whether err is marked permanent.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}

// IsNextPageExpired reports whether err is a next-page 404: the chain's URL
// expired or is unknown, and the window must be asked again from its first
// page (C3).
func IsNextPageExpired(err error) bool {
	var s *StatusError
	return errors.As(err, &s) && s.NextPage && s.Status == http.StatusNotFound
}

// IsUnreachable reports whether err is a request that got no answer: the
// connection failed (a name that does not resolve, a refused or reset
// connection) or timed out before the response began. Its text is the
// scrubbed text of the network error.
func IsUnreachable(err error) bool {
	var te *transientError
	return errors.As(err, &te) && (te.reason == "network" || te.reason == "timeout")
}

// transientError marks a failed attempt the client retries (C5).
type transientError struct {
	reason string // metric label of collector_retries_total
	err    error
}

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

// BodyTooLargeError reports an answer whose body is over api.max_body_bytes.
// The client stops reading at the limit (or before reading, when the
// announced length is over it) and wraps it in a *PermanentError: the same
// request would bring the same body. The poller answers it by splitting the
// window, whose halves have smaller answers.
type BodyTooLargeError struct {
	// Status is the HTTP status of the answer.
	Status int
	// Limit is api.max_body_bytes.
	Limit int64
	// Length is the announced Content-Length, -1 when unknown.
	Length int64
}

// Error states the status, the announced length when known, and the limit.
func (e *BodyTooLargeError) Error() string {
	if e.Length >= 0 {
		return fmt.Sprintf("HTTP %d body of %d bytes is over %d bytes (api.max_body_bytes)", e.Status, e.Length, e.Limit)
	}
	return fmt.Sprintf("HTTP %d body over %d bytes (api.max_body_bytes)", e.Status, e.Limit)
}

// IsBodyTooLarge reports whether err holds a *BodyTooLargeError.
func IsBodyTooLarge(err error) bool {
	var b *BodyTooLargeError
	return errors.As(err, &b)
}

// ErrMalformedPage is wrapped by a Request.Decode error for an answer that
// is well-formed JSON but not a page (C3, C5): an empty 200, {}, no data
// member, data null or not an array, malformed paging. The client retries
// it like a cut-off body, under retry reason "malformed", and always warns
// about it: taken as an empty window, it would lose records.
var ErrMalformedPage = errors.New("malformed page")

// Reasons of PermanentReason: a bounded set, for labels (C5: answers that
// are not repeated unchanged).
const (
	// ReasonForbidden: 403, the key may not read the account or the
	// organization-level data (C2).
	ReasonForbidden = "forbidden"
	// ReasonUnauthorized: 401 from the token endpoint (the key or its
	// secret refused, C1) or on the edge token (C6); never a core data
	// request's 401, which a renewed token cures.
	ReasonUnauthorized = "unauthorized"
	// ReasonBadRequest: 400 (a filter, a window the API refuses; C3, C5).
	ReasonBadRequest = "bad_request"
	// ReasonNotFound: 404 that is not a next-page expiry.
	ReasonNotFound = "not_found"
	// ReasonMethodNotAllowed: 405.
	ReasonMethodNotAllowed = "method_not_allowed"
	// ReasonConflict: 409.
	ReasonConflict = "conflict"
	// ReasonClientError: another 4xx.
	ReasonClientError = "client_error"
	// ReasonOrigin: a next page or redirect to another origin (C1, C3).
	ReasonOrigin = "origin"
	// ReasonBodyTooLarge: an answer over api.max_body_bytes.
	ReasonBodyTooLarge = "body_too_large"
	// ReasonOther: any other error that repeating cannot cure.
	ReasonOther = "permanent"
)

// PermanentReasons returns every reason PermanentReason gives.
func PermanentReasons() []string {
	return []string{ReasonForbidden, ReasonUnauthorized, ReasonBadRequest, ReasonNotFound, ReasonMethodNotAllowed,
		ReasonConflict, ReasonClientError, ReasonOrigin, ReasonBodyTooLarge, ReasonOther}
}

// PermanentReason classifies an error that repeating the same request
// cannot cure (C5): its reason, and true. It gives false for what a retry
// may cure: transient errors, and a next-page expiry (C3), which asking the
// window again answers.
func PermanentReason(err error) (string, bool) {
	if !IsPermanent(err) || IsNextPageExpired(err) {
		return "", false
	}
	var se *StatusError
	switch {
	case errors.As(err, new(*origin.Error)):
		return ReasonOrigin, true
	case IsBodyTooLarge(err):
		return ReasonBodyTooLarge, true
	case errors.As(err, &se):
		switch se.Status {
		case http.StatusForbidden:
			return ReasonForbidden, true
		case http.StatusUnauthorized:
			return ReasonUnauthorized, true
		case http.StatusBadRequest:
			return ReasonBadRequest, true
		case http.StatusNotFound:
			return ReasonNotFound, true
		case http.StatusMethodNotAllowed:
			return ReasonMethodNotAllowed, true
		case http.StatusConflict:
			return ReasonConflict, true
		}
		return ReasonClientError, true
	}
	return ReasonOther, true
}
