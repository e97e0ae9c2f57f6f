package app

import (
	"encoding/json"
	"fmt"
	"strings"
)

// openAPIBase is the kernel's part of /v1/openapi.json: info, the security
// scheme and the shared schemas (Error, Tag, timestamps). Modules add their
// paths and schemas through OpenAPIDocumenter.
const openAPIBase = `{
  "openapi": "3.1.0",
  "info": {
    "title": "OnAir v1",
    "version": "1",
    "description": "Live shows, chat and users. Every route needs Authorization: Bearer <token>. Timestamps are UTC, YYYY-MM-DD HH:MM:SS."
  },
  "security": [{"bearer": []}],
  "paths": {
    "/v1/openapi.json": {
      "get": {
        "operationId": "getOpenAPI",
        "tags": ["meta"],
        "summary": "This document. Public: it needs no token.",
        "security": [],
        "responses": {
          "200": {"description": "The OpenAPI 3.1 document.", "content": {"application/json": {"schema": {"type": "object"}}}}
        }
      }
    }
  },
  "components": {
    "securitySchemes": {
      "bearer": {"type": "http", "scheme": "bearer", "description": "An opaque token from onair tokens create, the account page or the admin console."}
    },
    "parameters": {
      "page": {"name": "page", "in": "query", "required": false, "description": "Page number, from 1.", "schema": {"type": "integer", "minimum": 1}}
    },
    "schemas": {
      "Timestamp": {"type": "string", "pattern": "^\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2}$", "description": "UTC, YYYY-MM-DD HH:MM:SS"},
      "Tag": {
        "type": "object", "additionalProperties": false,
        "required": ["name", "slug"],
        "properties": {
          "name": {"type": "string", "description": "The tag; spellings equal once trimmed, white space collapsed and case-folded are one tag, named by its first spelling."},
          "slug": {"type": "string", "description": "URL-friendly form of the name, unique (C c, C# c-sharp, C++ c-plus-plus); ?tag= takes it."}
        }
      },
      "Error": {
        "type": "object", "additionalProperties": false, "required": ["error"],
        "properties": {"error": {
          "type": "object", "additionalProperties": false,
          "required": ["status", "code", "message"],
          "properties": {
            "status": {"type": "integer"},
            "code": {"type": "string"},
            "message": {"type": "string"},
            "fields": {"type": "object", "additionalProperties": {"type": "string"}}
          }
        }}
      }
    },
    "headers": {
      "X-RateLimit-Limit": {"description": "Requests a minute the token may make (ONAIR_RATE_LIMIT).", "schema": {"type": "integer"}},
      "X-RateLimit-Remaining": {"description": "Requests left in the current window.", "schema": {"type": "integer"}},
      "X-RateLimit-Reset": {"description": "Seconds until the window resets.", "schema": {"type": "integer"}},
      "Retry-After": {"description": "Seconds to wait before retrying.", "schema": {"type": "integer"}}
    },
    "responses": {
      "Error": {"description": "An error in the one error shape.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
      "RateLimited": {
        "description": "Too many requests: over the token's rate limit (rate_limited, with the X-RateLimit-* trio), too many failed authentications from the client address (rate_limited), or too many sockets from it (too_many_connections). Retry-After says when to retry.",
        "headers": {
          "Retry-After": {"$ref": "#/components/headers/Retry-After"},
          "X-RateLimit-Limit": {"$ref": "#/components/headers/X-RateLimit-Limit"},
          "X-RateLimit-Remaining": {"$ref": "#/components/headers/X-RateLimit-Remaining"},
          "X-RateLimit-Reset": {"$ref": "#/components/headers/X-RateLimit-Reset"}
        },
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
      }
    }
  }
}`

// kernelResponses are the answers the kernel itself gives on every
// authenticated /v1 operation (the token check, the failed-auth throttle
// and the rate limiter, headers over the read buffer, panic recovery, the
// request deadline), and on
// every operation that reads a request body (ReadInput and the body
// limit). BuildOpenAPI adds them where a module did not, so a module
// documents only its own outcomes.
var (
	kernelResponses = []string{"401", "429", "431", "500", "503"}
	bodyResponses   = []string{"400", "413", "415"}
)

// BuildOpenAPI merges the kernel's base document with every module's
// fragment. An operation (a path's method) or a component defined twice
// is an error.
func BuildOpenAPI(core *Core) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal([]byte(openAPIBase), &doc); err != nil {
		return nil, fmt.Errorf("openapi: base: %w", err)
	}
	if core.Config != nil {
		doc["servers"] = []any{map[string]any{"url": core.Config.PublicURL, "description": "ONAIR_PUBLIC_URL; paths start with /v1"}}
	}
	for _, m := range core.Modules {
		d, ok := m.(OpenAPIDocumenter)
		if !ok {
			continue
		}
		var frag map[string]any
		if err := json.Unmarshal(d.OpenAPI(), &frag); err != nil {
			return nil, fmt.Errorf("openapi: module %s: %w", m.Name(), err)
		}
		if err := mergeInto(doc, frag, "", m.Name()); err != nil {
			return nil, err
		}
	}
	addKernelResponses(doc)
	return json.MarshalIndent(doc, "", "  ")
}

// addKernelResponses lists the kernel's own error answers on every
// operation that needs a token (and the body errors where there is a body).
// Every 2xx of an authenticated operation carries the X-RateLimit-* trio;
// every 429 is the RateLimited response with its headers.
func addKernelResponses(doc map[string]any) {
	errRef := map[string]any{"$ref": "#/components/responses/Error"}
	rateLimited := map[string]any{"$ref": "#/components/responses/RateLimited"}
	paths, _ := doc["paths"].(map[string]any)
	for _, item := range paths {
		ops, _ := item.(map[string]any)
		for method, op := range ops {
			o, ok := op.(map[string]any)
			if !ok || !isHTTPMethod(method) {
				continue
			}
			if sec, ok := o["security"].([]any); ok && len(sec) == 0 {
				continue // public
			}
			responses, _ := o["responses"].(map[string]any)
			if responses == nil {
				responses = map[string]any{}
				o["responses"] = responses
			}
			codes := kernelResponses
			if _, ok := o["requestBody"]; ok {
				codes = append(append([]string(nil), codes...), bodyResponses...)
			}
			for _, code := range codes {
				if _, ok := responses[code]; !ok {
					responses[code] = errRef
				}
			}
			if ref, _ := responses["429"].(map[string]any); ref["$ref"] == errRef["$ref"] {
				responses["429"] = rateLimited
			}
			for code, r := range responses {
				if resp, ok := r.(map[string]any); ok && strings.HasPrefix(code, "2") && resp["$ref"] == nil {
					addRateLimitHeaders(resp)
				}
			}
		}
	}
}

func addRateLimitHeaders(resp map[string]any) {
	headers, _ := resp["headers"].(map[string]any)
	if headers == nil {
		headers = map[string]any{}
		resp["headers"] = headers
	}
	for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		if _, ok := headers[h]; !ok {
			headers[h] = map[string]any{"$ref": "#/components/headers/" + h}
		}
	}
}

func isHTTPMethod(s string) bool {
	switch s {
	case "get", "put", "post", "delete", "patch", "head", "options":
		return true
	}
	return false
}

// mergeInto copies frag's "paths" and "components" maps into doc, two levels
// deep (components/schemas/Name), refusing duplicates.
func mergeInto(doc, frag map[string]any, _ string, module string) error {
	for _, top := range []string{"paths", "components"} {
		src, _ := frag[top].(map[string]any)
		if src == nil {
			continue
		}
		dst, _ := doc[top].(map[string]any)
		if top == "paths" {
			// Two modules may document one path (users' POST and
			// notify's PUT of /v1/users/{id}/follow), never one operation.
			for k, v := range src {
				have, dup := dst[k].(map[string]any)
				if !dup {
					dst[k] = v
					continue
				}
				ops, _ := v.(map[string]any)
				for method, op := range ops {
					if _, twice := have[method]; twice {
						return fmt.Errorf("openapi: module %s: %s %s documented twice", module, method, k)
					}
					have[method] = op
				}
			}
			continue
		}
		for kind, items := range src {
			itemMap, _ := items.(map[string]any)
			target, _ := dst[kind].(map[string]any)
			if target == nil {
				target = map[string]any{}
				dst[kind] = target
			}
			for name, v := range itemMap {
				if _, dup := target[name]; dup {
					return fmt.Errorf("openapi: module %s: components.%s.%s defined twice", module, kind, name)
				}
				target[name] = v
			}
		}
	}
	return nil
}
