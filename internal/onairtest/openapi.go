package onairtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/onair/onair/app"
)

// LoadOpenAPI builds the document the server serves at /v1/openapi.json,
// loads it with kin-openapi and validates it.
func LoadOpenAPI(core *app.Core) (*openapi3.T, error) {
	raw, err := app.BuildOpenAPI(core)
	if err != nil {
		return nil, err
	}
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		return nil, fmt.Errorf("openapi: load: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi: invalid document: %w", err)
	}
	return doc, nil
}

// openAPIValidator checks that a /v1 response is one the document allows:
// its status is listed for the operation and its body validates against
// that status's schema.
type openAPIValidator struct {
	router routers.Router
}

func newOpenAPIValidator(core *app.Core) (*openAPIValidator, error) {
	doc, err := LoadOpenAPI(core)
	if err != nil {
		return nil, err
	}
	// Match by path alone: a test may serve on an address other than the
	// document's server (ONAIR_PUBLIC_URL).
	doc.Servers = nil
	r, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: router: %w", err)
	}
	return &openAPIValidator{router: r}, nil
}

// check validates one exchange. Paths outside /v1, HEAD requests and paths
// the document does not know (the /v1 catch-all 404; the test that every
// route is documented covers real routes) are not checked.
func (v *openAPIValidator) check(req *http.Request, resp *http.Response, body []byte) error {
	if !strings.HasPrefix(req.URL.Path, "/v1/") || req.Method == http.MethodHead {
		return nil
	}
	route, params, err := v.router.FindRoute(req)
	if err != nil {
		return nil
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(req.Context(), in); err != nil {
		return fmt.Errorf("openapi: %s %s answered %d, which /v1/openapi.json does not allow: %v\nbody: %s",
			req.Method, req.URL.RequestURI(), resp.StatusCode, err, body)
	}
	return nil
}
