package app

import (
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
func ErrorHandler(log interface{ Error(string, ...any) }) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		var apiErr *Error
		var fe *fiber.Error
		switch {
		case errors.As(err, &apiErr):
		case errors.As(err, &fe):
			apiErr = &Error{Status: fe.Code, Code: codeFor(fe.Code), Message: fe.Message}
		default:
			log.Error("request failed", "method", c.Method(), "path", c.Path(), "request_id", RequestID(c), "err", err)
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

func codeFor(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "bad_request"
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusForbidden:
		return "forbidden"
	case http.StatusNotFound:
		return "not_found"
	case http.StatusMethodNotAllowed:
		return "method_not_allowed"
	case http.StatusConflict:
		return "conflict"
	case http.StatusRequestEntityTooLarge:
		return "body_too_large"
	case http.StatusUnsupportedMediaType:
		return "unsupported_media_type"
	case http.StatusUnprocessableEntity:
		return "validation_failed"
	case http.StatusTooManyRequests:
		return "rate_limited"
	}
	if status >= 500 {
		return "internal_error"
	}
	return "error"
}
