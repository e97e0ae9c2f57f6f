package app

import (
	"fmt"
	"strings"

	"github.com/casbin/casbin/v2"
	"github.com/casbin/casbin/v2/model"
	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/policies"
)

// Staff and relation roles known to the kernel. Modules may add their own
// relation roles (such as "owner") when they ask.
const (
	RoleUser      = "user"
	RoleRadio     = "radio"
	RoleModerator = "moderator"
	RoleAdmin     = "admin"
)

// kernelPolicies are the kernel's own lines: an admin is everything a
// moderator is.
var kernelPolicies = []string{
	"g, admin, moderator",
}

// Authz is the one Casbin enforcer of the process.
type Authz struct {
	e *casbin.SyncedEnforcer
}

// NewAuthz builds the enforcer from policies/model.conf and the given policy
// lines (module name → lines). A malformed line is an error naming it.
func NewAuthz(lines map[string][]string) (*Authz, error) {
	m, err := model.NewModelFromString(policies.Model)
	if err != nil {
		return nil, fmt.Errorf("authz: model: %w", err)
	}
	e, err := casbin.NewSyncedEnforcer(m)
	if err != nil {
		return nil, fmt.Errorf("authz: enforcer: %w", err)
	}
	e.EnableAutoSave(false)
	add := func(source string, list []string) error {
		for _, line := range list {
			ptype, rule, err := parsePolicyLine(line)
			if err != nil {
				return fmt.Errorf("authz: %s: policy line %q: %w", source, line, err)
			}
			if ptype == "p" {
				_, err = e.AddPolicy(rule)
			} else {
				_, err = e.AddGroupingPolicy(rule)
			}
			if err != nil {
				return fmt.Errorf("authz: %s: policy line %q: %w", source, line, err)
			}
		}
		return nil
	}
	if err := add("kernel", kernelPolicies); err != nil {
		return nil, err
	}
	for source, list := range lines {
		if err := add(source, list); err != nil {
			return nil, err
		}
	}
	return &Authz{e: e}, nil
}

// parsePolicyLine checks one "p, sub, obj, act" or "g, role, parent" line.
func parsePolicyLine(line string) (string, []string, error) {
	parts := strings.Split(line, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
		if parts[i] == "" {
			return "", nil, fmt.Errorf("empty field %d", i+1)
		}
	}
	switch parts[0] {
	case "p":
		if len(parts) != 4 {
			return "", nil, fmt.Errorf("want p, subject, object, action")
		}
	case "g":
		if len(parts) != 3 {
			return "", nil, fmt.Errorf("want g, role, inherited-role")
		}
	default:
		return "", nil, fmt.Errorf("must start with p or g")
	}
	return parts[0], parts[1:], nil
}

// Allowed tells whether any of the roles may do act on obj.
func (a *Authz) Allowed(roles []string, obj, act string) bool {
	for _, r := range roles {
		if ok, err := a.e.Enforce(r, obj, act); err == nil && ok {
			return true
		}
	}
	return false
}

// Can checks the principal (plus relation roles such as "owner") and
// returns a 403 error when the action is not allowed.
func (a *Authz) Can(p *Principal, obj, act string, relations ...string) error {
	if p == nil {
		return Unauthorized("authentication required")
	}
	roles := append(append([]string(nil), p.Roles...), relations...)
	if a.Allowed(roles, obj, act) {
		return nil
	}
	return Forbidden(fmt.Sprintf("not allowed to %s this %s", act, obj))
}

// Principal is the authenticated caller of a request.
type Principal struct {
	UserID  int64
	TokenID int64
	// Roles holds "user" and whatever else the user is: "radio",
	// "moderator", "admin".
	Roles []string
}

// HasRole tells whether the principal holds role directly.
func (p *Principal) HasRole(role string) bool {
	for _, r := range p.Roles {
		if r == role {
			return true
		}
	}
	return false
}

// IsStaff tells whether the principal is a moderator or an admin.
func (p *Principal) IsStaff() bool { return p.HasRole(RoleAdmin) || p.HasRole(RoleModerator) }

const principalKey = "onair.principal"

// SetPrincipal stores the caller on the request.
func SetPrincipal(c *fiber.Ctx, p *Principal) { c.Locals(principalKey, p) }

// CurrentPrincipal returns the caller of an authenticated request, or nil.
func CurrentPrincipal(c *fiber.Ctx) *Principal {
	p, _ := c.Locals(principalKey).(*Principal)
	return p
}
