package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/gofiber/fiber/v2"
)

// Error is the one error body of the API:
//
//	{"error": {"status": 422, "code": "validation_failed", "message": "…", "fields": {...}}}
//
// Handlers return *Error values; the Fiber error handler renders them.
type Error struct {
	Status  int               `json:"status"`
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Fields  map[string]string `json:"fields,omitempty"`
	// RetryAfter, when set, becomes the Retry-After header (seconds).
	RetryAfter int `json:"-"`
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// The errors of product-decisions.md, one constructor per status.

func BadRequest(format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: "bad_request", Message: fmt.Sprintf(format, args...)}
}

func Unauthorized(msg string) *Error {
	return &Error{Status: http.StatusUnauthorized, Code: "unauthorized", Message: msg}
}

func Forbidden(msg string) *Error {
	return &Error{Status: http.StatusForbidden, Code: "forbidden", Message: msg}
}

func NotFound(what string) *Error {
	return &Error{Status: http.StatusNotFound, Code: "not_found", Message: what + " not found"}
}

func Conflict(msg string) *Error {
	return &Error{Status: http.StatusConflict, Code: "conflict", Message: msg}
}

func TooManyRequests(msg string, retryAfter int) *Error {
	return &Error{Status: http.StatusTooManyRequests, Code: "rate_limited", Message: msg, RetryAfter: retryAfter}
}

// unavailableRetry is the Retry-After of an answer given while the
// database does not answer: long enough for a restart to progress, short
// enough that a client notices its end soon.
const unavailableRetry = 5

// Unavailable is the 503 of a request whose database (or another service
// it needs) does not answer now.
func Unavailable() *Error {
	return &Error{Status: http.StatusServiceUnavailable, Code: "unavailable",
		Message: "a service this request needs (the database) does not answer; retry later", RetryAfter: unavailableRetry}
}

// Validation collects field errors; an empty one is no error.
type Validation map[string]string

// Add records the first problem of a field.
func (v Validation) Add(field, problem string) {
	if _, ok := v[field]; !ok {
		v[field] = problem
	}
}

// Err returns the 422 error, or nil when no field failed.
func (v Validation) Err() error {
	if len(v) == 0 {
		return nil
	}
	return &Error{Status: http.StatusUnprocessableEntity, Code: "validation_failed", Message: "some fields are invalid", Fields: v}
}

// ErrorHandler renders every error a handler returns in the API's shape.
// Fiber's own errors (404 route, 405, 413 body too large...) keep their
// status; anything else is a real fault and answers 500 without details.
func ErrorHandler(log interface {
	Error(string, ...any)
	Warn(string, ...any)
}) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		var apiErr *Error
		var fe *fiber.Error
		switch {
		case errors.As(err, &apiErr):
		case errors.As(err, &fe):
			apiErr = &Error{Status: fe.Code, Code: codeFor(fe.Code), Message: fe.Message}
		case IsUnavailable(err):
			// The database (or another service the request needs) is
			// down, restarting or locked: the client may try again.
			log.Warn("request failed: a dependency is unavailable", "method", c.Method(), "path", c.Path(), "request_id", RequestID(c), "err", err)
			apiErr = Unavailable()
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(c.UserContext().Err(), context.DeadlineExceeded):
			// The request outlived ONAIR_REQUEST_TIMEOUT (requestDeadline).
			log.Error("request timed out", "method", c.Method(), "path", LogPath(c), "request_id", RequestID(c), "err", err)
			apiErr = &Error{Status: http.StatusServiceUnavailable, Code: "timeout", Message: "the request took too long; retry later", RetryAfter: 1}
		default:
			log.Error("request failed", "method", c.Method(), "path", LogPath(c), "request_id", RequestID(c), "err", err)
			apiErr = &Error{Status: http.StatusInternalServerError, Code: "internal_error", Message: "internal server error"}
		}
		if apiErr.Status == http.StatusUnauthorized {
			c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="onair"`)
		}
		if apiErr.RetryAfter > 0 {
			c.Set(fiber.HeaderRetryAfter, fmt.Sprint(apiErr.RetryAfter))
		}
		return c.Status(apiErr.Status).JSON(fiber.Map{"error": apiErr})
	}
}

// codeFor is the code of a status that came without one: Fiber's and
// fasthttp's own errors (an unknown route, a method not allowed, a request
// too large, too slow or malformed). docs/api.md lists them.
func codeFor(status int) string {
	if code, ok := statusCodes[status]; ok {
		return code
	}
	if status >= 500 {
		return "internal_error"
	}
	return "error"
}

var statusCodes = map[int]string{
	http.StatusBadRequest:                  "bad_request",
	http.StatusUnauthorized:                "unauthorized",
	http.StatusForbidden:                   "forbidden",
	http.StatusNotFound:                    "not_found",
	http.StatusMethodNotAllowed:            "method_not_allowed",
	http.StatusRequestTimeout:              "request_timeout",
	http.StatusConflict:                    "conflict",
	http.StatusLengthRequired:              "length_required",
	http.StatusRequestEntityTooLarge:       "body_too_large",
	http.StatusRequestURITooLong:           "uri_too_long",
	http.StatusUnsupportedMediaType:        "unsupported_media_type",
	http.StatusExpectationFailed:           "expectation_failed",
	http.StatusUnprocessableEntity:         "validation_failed",
	http.StatusUpgradeRequired:             "upgrade_required",
	http.StatusTooManyRequests:             "rate_limited",
	http.StatusRequestHeaderFieldsTooLarge: "headers_too_large",
	http.StatusNotImplemented:              "not_implemented",
	http.StatusBadGateway:                  "bad_gateway",
	http.StatusServiceUnavailable:          "unavailable",
	http.StatusHTTPVersionNotSupported:     "http_version_not_supported",
}
