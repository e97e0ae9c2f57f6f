// Package policies holds the Casbin model every module's policy lines are
// checked against.
package policies

import _ "embed"

// Model is the text of model.conf.
//
//go:embed model.conf
var Model string
