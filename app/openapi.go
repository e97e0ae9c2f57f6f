package app

import (
	"encoding/json"
	"fmt"
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
  "paths": {},
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
        "properties": {"name": {"type": "string"}, "slug": {"type": "string"}}
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
    "responses": {
      "Error": {"description": "An error in the one error shape.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    }
  }
}`

// BuildOpenAPI merges the kernel's base document with every module's
// fragment. A path or component defined twice is an error.
func BuildOpenAPI(core *Core) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal([]byte(openAPIBase), &doc); err != nil {
		return nil, fmt.Errorf("openapi: base: %w", err)
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
	return json.MarshalIndent(doc, "", "  ")
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
			for k, v := range src {
				if _, dup := dst[k]; dup {
					return fmt.Errorf("openapi: module %s: path %s documented twice", module, k)
				}
				dst[k] = v
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
