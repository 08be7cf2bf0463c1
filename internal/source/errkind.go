package source

import (
	"errors"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/api/origin"
)

// errorKind is the kind label of collector_poll_errors_total for a failed
// poll: origin, body_too_large, auth, forbidden, bad_request,
// nextpage_expired, permanent or transient. auth is the key refused by the
// token endpoint, or the edge token refused (C1, C6); a data request's 401
// that gave up after api.retry.max_attempts (tokens revoked again and
// again) is transient.
func errorKind(err error) string {
	var se *api.StatusError
	switch {
	case errors.As(err, new(*origin.Error)):
		return "origin"
	case api.IsBodyTooLarge(err):
		return "body_too_large"
	case errors.As(err, &se) && se.Status == 401 && api.IsPermanent(err):
		return "auth"
	case errors.As(err, &se) && se.Status == 403:
		return "forbidden"
	case errors.As(err, &se) && se.Status == 400:
		return "bad_request"
	case api.IsNextPageExpired(err):
		return "nextpage_expired"
	case api.IsPermanent(err):
		return "permanent"
	default:
		return "transient"
	}
}
