package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"strings"

	"github.com/gofiber/fiber/v2"
)

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

// Has tells whether the field was sent at all.
func (in *Input) Has(name string) bool {
	if _, ok := in.json[name]; ok {
		return true
	}
	_, ok := in.form[name]
	return ok
}

// String returns a text field. A JSON value that is not a string (or null)
// is 400.
func (in *Input) String(name string) (string, bool, error) {
	if raw, ok := in.json[name]; ok {
		if string(raw) == "null" {
			return "", true, nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", true, BadRequest("%s must be a string", name)
		}
		return s, true, nil
	}
	if vs, ok := in.form[name]; ok && len(vs) > 0 {
		return vs[0], true, nil
	}
	return "", false, nil
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
			return list, true, nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			return splitComma(s), true, nil
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
	return out, true, nil
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
