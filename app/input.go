package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
)

// Text input, whether a query parameter or a body field, is valid UTF-8
// without NUL characters. Neither database takes a NUL through Bun (SQLite
// refuses the statement, MySQL silently drops the byte), and bytes that are
// not UTF-8 are not text: MySQL would refuse them and JSON cannot carry
// them. The rule is applied where input enters (ReadInput, Input.String,
// Input.Strings, QueryText), so no handler has to remember it: a query
// parameter that breaks it is a 400, a body field a 422 naming the field.
// In a JSON body that is also raw bytes that are not UTF-8 and a lone
// surrogate escape ("\ud800"), which encoding/json would silently make
// U+FFFD (jsonTextProblem).

// TextProblem says why s cannot be taken as text ("must be valid UTF-8
// text", "must not contain NUL characters"), or "" when it can.
func TextProblem(s string) string {
	if !utf8.ValidString(s) {
		return "must be valid UTF-8 text"
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "must not contain NUL characters"
	}
	return ""
}

// QueryText reads a text query parameter ("" when absent). A value that is
// not valid UTF-8, holds a control character (NUL included) or is longer
// than max characters is a 400. The value is copied: Fiber lends the
// request's buffer only until the handler returns.
func QueryText(c *fiber.Ctx, name string, max int) (string, error) {
	v := c.Query(name)
	if v == "" {
		return "", nil
	}
	if TextProblem(v) != "" || strings.IndexFunc(v, unicode.IsControl) >= 0 || utf8.RuneCountInString(v) > max {
		return "", BadRequest("%s must be text of at most %d characters, without control characters", name, max)
	}
	return strings.Clone(v), nil
}

// Input is the decoded body of a POST or PUT request, whatever its encoding
// (JSON object, urlencoded form or multipart form). It remembers which fields
// were sent, so PUT can change only those.
type Input struct {
	json map[string]json.RawMessage
	form map[string][]string
}

// ReadInput decodes the request body. Bad JSON is 400; an unknown content
// type is 415. An empty body is an empty input.
func ReadInput(c *fiber.Ctx) (*Input, error) {
	in := &Input{form: map[string][]string{}}
	body := bytes.TrimSpace(c.Body())
	ct, _, _ := mime.ParseMediaType(c.Get(fiber.HeaderContentType))
	switch {
	case len(body) == 0 && ct != fiber.MIMEMultipartForm:
		return in, nil
	case ct == fiber.MIMEApplicationJSON || (ct == "" && len(body) > 0 && body[0] == '{') || strings.HasSuffix(ct, "+json"):
		if err := json.Unmarshal(body, &in.json); err != nil || in.json == nil {
			return nil, BadRequest("request body is not a JSON object")
		}
		if jsonTextProblem(body) {
			return nil, badJSONText(in.json)
		}
	case ct == fiber.MIMEApplicationForm:
		c.Request().PostArgs().VisitAll(func(k, v []byte) {
			key := strings.TrimSuffix(string(k), "[]")
			in.form[key] = append(in.form[key], string(v))
		})
	case ct == fiber.MIMEMultipartForm:
		mf, err := c.MultipartForm()
		if err != nil {
			return nil, BadRequest("malformed multipart body")
		}
		for k, vs := range mf.Value {
			key := strings.TrimSuffix(k, "[]")
			in.form[key] = append(in.form[key], vs...)
		}
	default:
		return nil, &Error{Status: fiber.StatusUnsupportedMediaType, Code: "unsupported_media_type",
			Message: "send application/json, application/x-www-form-urlencoded or multipart/form-data"}
	}
	return in, nil
}

// badJSONText is the 422 of a JSON body with a string that is not text
// (jsonTextProblem), naming the fields whose values hold one; when only a
// field's name does, no field can be named.
func badJSONText(fields map[string]json.RawMessage) error {
	v := Validation{}
	for name, raw := range fields {
		if jsonTextProblem(raw) {
			v.Add(name, "must be valid UTF-8 text (no lone surrogate escape)")
		}
	}
	if len(v) == 0 {
		return &Error{Status: fiber.StatusUnprocessableEntity, Code: "validation_failed",
			Message: "a field name of the body is not valid UTF-8 text (no lone surrogate escape)"}
	}
	return v.Err()
}

// Has tells whether the field was sent at all.
func (in *Input) Has(name string) bool {
	if _, ok := in.json[name]; ok {
		return true
	}
	_, ok := in.form[name]
	return ok
}

// String returns a text field. A JSON value that is not a string (or null)
// is 400; text that is not valid UTF-8 or holds a NUL is 422 on the field.
func (in *Input) String(name string) (string, bool, error) {
	if raw, ok := in.json[name]; ok {
		if string(raw) == "null" {
			return "", true, nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", true, BadRequest("%s must be a string", name)
		}
		return s, true, checkText(name, s)
	}
	if vs, ok := in.form[name]; ok && len(vs) > 0 {
		return vs[0], true, checkText(name, vs[0])
	}
	return "", false, nil
}

// checkText is the text rule for a body field: a 422 naming the field.
func checkText(field string, values ...string) error {
	for _, v := range values {
		if p := TextProblem(v); p != "" {
			return Validation{field: p}.Err()
		}
	}
	return nil
}

// Bool returns a boolean field: true/false (also 1/0). Anything else is 400.
func (in *Input) Bool(name string) (bool, bool, error) {
	if raw, ok := in.json[name]; ok {
		var v any
		_ = json.Unmarshal(raw, &v)
		switch x := v.(type) {
		case bool:
			return x, true, nil
		case float64:
			if x == 0 || x == 1 {
				return x == 1, true, nil
			}
		case string:
			if b, err := ParseBool(x); err == nil {
				return b, true, nil
			}
		}
		return false, true, BadRequest("%s must be true or false", name)
	}
	if vs, ok := in.form[name]; ok && len(vs) > 0 {
		b, err := ParseBool(vs[0])
		if err != nil {
			return false, true, BadRequest("%s must be true or false", name)
		}
		return b, true, nil
	}
	return false, false, nil
}

// Strings returns a list field: a JSON array of strings, repeated form
// fields (name or name[]), or one comma-separated string.
func (in *Input) Strings(name string) ([]string, bool, error) {
	if raw, ok := in.json[name]; ok {
		var list []string
		if err := json.Unmarshal(raw, &list); err == nil {
			return list, true, checkText(name, list...)
		}
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			return splitComma(s), true, checkText(name, s)
		}
		if string(raw) == "null" {
			return nil, true, nil
		}
		return nil, true, BadRequest("%s must be an array of strings or a comma-separated string", name)
	}
	vs, ok := in.form[name]
	if !ok {
		return nil, false, nil
	}
	var out []string
	for _, v := range vs {
		out = append(out, splitComma(v)...)
	}
	return out, true, checkText(name, vs...)
}

func splitComma(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if p := strings.TrimSpace(part); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// ParseBool accepts true/false and 1/0.
func ParseBool(s string) (bool, error) {
	switch s {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, fmt.Errorf("not a boolean")
}

// QueryBool reads an optional boolean query parameter; nil when absent,
// 400 when it is not true/false/1/0.
func QueryBool(c *fiber.Ctx, name string) (*bool, error) {
	raw := c.Query(name)
	if raw == "" {
		return nil, nil
	}
	b, err := ParseBool(raw)
	if err != nil {
		return nil, BadRequest("%s must be true or false, got %q", name, raw)
	}
	return &b, nil
}
