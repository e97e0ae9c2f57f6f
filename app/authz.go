package app

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

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

// Authz is the one Casbin enforcer of the process, with a cache of its
// decisions.
//
// Every check of a handler asks the enforcer about one (role, object,
// action) at a time, and the answer depends on nothing else: roles come
// from the principal (or a relation such as "owner" the handler worked
// out), the policy lines from the modules' code. The enforcer's matcher
// costs ~10 µs a call allowed and ~30 µs denied (docs/benchmarks.md,
// "Shows API"); the answer is kept instead, by (role, object, action),
// and forgotten whenever the policy changes (addLines), so a new line is
// in effect for the very next check. Policies only change at start-up
// today (NewAuthz); anything that changes them later must go through
// addLines too.
type Authz struct {
	e *casbin.SyncedEnforcer

	mu        sync.RWMutex
	decisions map[decision]bool
}

// decision is the key of a cached answer.
type decision struct{ role, obj, act string }

// maxDecisions bounds the cache; past it, it starts over. The keys come
// from code (objects, actions, relation roles) and the roles of users, a
// few hundred at most.
const maxDecisions = 4096

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
	a := &Authz{e: e}
	if err := a.addLines("kernel", kernelPolicies); err != nil {
		return nil, err
	}
	for source, list := range lines {
		if err := a.addLines(source, list); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// addLines adds policy lines of source ("p, ..." or "g, ...") and forgets
// every cached decision.
func (a *Authz) addLines(source string, list []string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.decisions = nil
	for _, line := range list {
		ptype, rule, err := parsePolicyLine(line)
		if err != nil {
			return fmt.Errorf("authz: %s: policy line %q: %w", source, line, err)
		}
		if ptype == "p" {
			_, err = a.e.AddPolicy(rule)
		} else {
			_, err = a.e.AddGroupingPolicy(rule)
		}
		if err != nil {
			return fmt.Errorf("authz: %s: policy line %q: %w", source, line, err)
		}
	}
	return nil
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
		if a.allowed(r, obj, act) {
			return true
		}
	}
	return false
}

// allowed is the enforcer's answer for one role, from the cache when it
// has it. An enforcer error is a refusal, and is not kept.
func (a *Authz) allowed(role, obj, act string) bool {
	k := decision{role, obj, act}
	a.mu.RLock()
	ok, cached := a.decisions[k]
	a.mu.RUnlock()
	if cached {
		return ok
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	ok, err := a.e.Enforce(role, obj, act)
	if err != nil {
		return false
	}
	if a.decisions == nil || len(a.decisions) >= maxDecisions {
		a.decisions = make(map[decision]bool)
	}
	a.decisions[k] = ok
	return ok
}

// Can checks the principal (plus relation roles such as "owner") and
// returns a 403 error when the action is not allowed.
func (a *Authz) Can(p *Principal, obj, act string, relations ...string) error {
	if p == nil {
		return Unauthorized("authentication required")
	}
	if a.Allowed(p.Roles, obj, act) || a.Allowed(relations, obj, act) {
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

	// rateKey caches the key of the per-token rate limiter: the token
	// cache hands the same principal to every request of a token, so
	// the key is built once per token and cache period, not per request.
	rateKey atomic.Pointer[rateKey]
}

type rateKey struct{ prefix, key string }

// rateLimitKey is the rate limiter's key of the principal's token under
// the Redis prefix: "{prefix}rl:token:{id}".
func (p *Principal) rateLimitKey(prefix string) string {
	if k := p.rateKey.Load(); k != nil && k.prefix == prefix {
		return k.key
	}
	k := &rateKey{prefix: prefix, key: prefix + "rl:token:" + strconv.FormatInt(p.TokenID, 10)}
	p.rateKey.Store(k)
	return k.key
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
