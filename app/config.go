package app

import (
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/onair/onair/internal/store"
)

// Config is every setting of the process. Each one comes from an ONAIR_*
// environment variable and can be overridden by the flag of the same name.
// The kernel's own settings are fields; a module's settings (declared by
// its Settings method) are read with Get.
type Config struct {
	HTTPAddr    string
	PublicURL   string
	DataDir     string
	DatabaseURL string
	RedisURL    string
	RedisPrefix string
	RateLimit   int
	LogFormat   string
	LogLevel    string
	// MetricsAddr, when set, moves /metrics off the public HTTP port to a
	// listener of its own.
	MetricsAddr string
	// TrustedProxies are the networks whose X-Forwarded-For is believed.
	TrustedProxies []*net.IPNet
	// CORSOrigins are the origins browsers may call /v1 from ("*": any).
	CORSOrigins []string
	// MaxConns caps the open HTTP connections of the process; 0 derives
	// the cap from the descriptor limit.
	MaxConns int
	// MaxConnsPerIP caps the open HTTP connections of one client address.
	MaxConnsPerIP int
	// AuthFailures is how many failed authentications a client address
	// may make in a minute before it is answered 429.
	AuthFailures int
	// RequestTimeout bounds the work of one request (its context's deadline).
	RequestTimeout time.Duration
	// StorageURL names the media store: file:///path (the default, in the
	// data dir) or s3://ACCESS:SECRET@host:port/bucket.
	StorageURL string
	// SecretKey, when set, is what every per-install secret derives from
	// (Core.Secret); never logged or shown.
	SecretKey string

	values map[string]any // module settings, by variable name
}

// Setting is one configuration value: an ONAIR_* environment variable and
// the flag of the same name. The kernel declares its own; a module declares
// its own through the Configurer ability, and the kernel reads, validates
// and documents them all alike (onair help, README.md's table).
type Setting struct {
	Env     string // ONAIR_RTMP_ADDR
	Flag    string // rtmp-addr
	Default string // the text used when neither variable nor flag is given
	Help    string // one line for onair help and README.md
	// Parse checks the text and returns the value modules read with Get
	// (a string, int, time.Duration, bool...). nil keeps the text as a
	// string. Its error is shown after the variable's name.
	Parse func(string) (any, error)

	set func(c *Config, v string) error // kernel settings: into a Config field
	// hidden keeps the value out of error messages (a secret).
	hidden bool
}

// kernelSettings lists the kernel's own settings, in the order README.md
// documents them; module settings follow in registration order.
var kernelSettings = []Setting{
	{Env: "ONAIR_HTTP_ADDR", Flag: "http-addr", Default: ":8080", Help: "address the HTTP server listens on",
		set: func(c *Config, v string) error { c.HTTPAddr = v; return checkAddr(v) }},
	{Env: "ONAIR_PUBLIC_URL", Flag: "public-url", Default: "http://localhost:8080", Help: "public base URL; every URL in a response is built from it",
		set: func(c *Config, v string) error {
			c.PublicURL = strings.TrimRight(v, "/")
			if strings.ContainsAny(c.PublicURL, "?#") {
				return fmt.Errorf("must not have a query or fragment")
			}
			return checkURL(c.PublicURL, "http", "https")
		}},
	{Env: "ONAIR_DATA_DIR", Flag: "data-dir", Default: "./data", Help: "directory for the SQLite file, recordings and thumbnails",
		set: func(c *Config, v string) error {
			if v == "" {
				return fmt.Errorf("must not be empty")
			}
			c.DataDir = v
			return nil
		}},
	{Env: "ONAIR_DATABASE_URL", Flag: "database-url", Help: "sqlite:///path/file.db or mysql://user:pass@host:3306/db (default: SQLite in the data dir)",
		set: func(c *Config, v string) error {
			c.DatabaseURL = v
			if v == "" {
				return nil
			}
			_, _, err := ParseDatabaseURL(v)
			return err
		}},
	{Env: "ONAIR_STORAGE_URL", Flag: "storage-url", Help: "where media (recordings, thumbnails, images) is kept: file:///path or s3://ACCESS:SECRET@host:port/bucket?secure=false&region=us-east-1 (default: media/ in the data dir)",
		set: func(c *Config, v string) error {
			c.StorageURL = v
			if v == "" {
				return nil
			}
			if strings.HasPrefix(v, "s3:") {
				_, err := store.ParseS3URL(v)
				return err
			}
			u, err := url.Parse(v)
			if err != nil || u.Scheme != "file" || u.Path == "" || u.Host != "" {
				return fmt.Errorf("must be file:///absolute/path or s3://ACCESS:SECRET@host:port/bucket")
			}
			return nil
		}},
	{Env: "ONAIR_REDIS_URL", Flag: "redis-url", Help: "redis://host:6379/0; enables shared rate limits, chat fan-out and presence across nodes",
		set: func(c *Config, v string) error {
			c.RedisURL = v
			if v == "" {
				return nil
			}
			return checkURL(v, "redis", "rediss")
		}},
	{Env: "ONAIR_REDIS_PREFIX", Flag: "redis-prefix", Default: "onair:", Help: "prefix of every Redis key, so several services can share one Redis",
		set: func(c *Config, v string) error { c.RedisPrefix = v; return nil }},
	{Env: "ONAIR_SECRET_KEY", Flag: "secret-key", hidden: true,
		Help: "key every per-install secret (the media URL signing key...) derives from, with HMAC-SHA256 over the secret's name; changing it rotates them (default: random secrets kept in the database)",
		set: func(c *Config, v string) error {
			c.SecretKey = v
			if v != "" && len(v) < minSecretKey {
				return fmt.Errorf("must have at least %d characters (openssl rand -hex 32)", minSecretKey)
			}
			return nil
		}},
	{Env: "ONAIR_RATE_LIMIT", Flag: "rate-limit", Default: "600", Help: "API requests per minute per token",
		set: func(c *Config, v string) (err error) { c.RateLimit, err = parsePositive(v); return err }},
	{Env: "ONAIR_AUTH_FAILURES", Flag: "auth-failures", Default: "20", Help: "failed /v1 authentications a client address may make per minute; beyond, 429 before any token lookup",
		set: func(c *Config, v string) (err error) { c.AuthFailures, err = parsePositive(v); return err }},
	{Env: "ONAIR_TRUSTED_PROXIES", Flag: "trusted-proxies", Help: "comma-separated addresses or CIDR networks of proxies whose X-Forwarded-For is believed",
		set: func(c *Config, v string) (err error) { c.TrustedProxies, err = parseNetworks(v); return err }},
	{Env: "ONAIR_CORS_ORIGINS", Flag: "cors-origins", Default: "*", Help: "comma-separated origins allowed to call /v1 from a browser (* for any, https://*.example.com for subdomains)",
		set: func(c *Config, v string) error {
			c.CORSOrigins = splitList(v)
			if len(c.CORSOrigins) == 0 {
				return fmt.Errorf("must be * or a list of origins")
			}
			for _, o := range c.CORSOrigins {
				if o == "*" && len(c.CORSOrigins) > 1 {
					return fmt.Errorf("* stands alone")
				}
				if err := checkOrigin(o); err != nil {
					return fmt.Errorf("origin %q: %v", o, err)
				}
			}
			return nil
		}},
	{Env: "ONAIR_MAX_CONNS", Flag: "max-conns", Default: "0", Help: "open HTTP connections of the process (0: the soft descriptor limit minus max(128, limit/8))",
		set: func(c *Config, v string) (err error) { c.MaxConns, err = parseNonNegative(v); return err }},
	{Env: "ONAIR_MAX_CONNS_PER_IP", Flag: "max-conns-per-ip", Default: "256", Help: "open HTTP connections (web sockets included) of one client address; trusted proxies are exempt, but the held requests they forward (event streams, LL-HLS blocking reloads, chat sockets) count for their client",
		set: func(c *Config, v string) (err error) { c.MaxConnsPerIP, err = parsePositive(v); return err }},
	{Env: "ONAIR_REQUEST_TIMEOUT", Flag: "request-timeout", Default: "30s", Help: "deadline of one request's work (seen by handlers through their context)",
		set: func(c *Config, v string) (err error) {
			c.RequestTimeout, err = time.ParseDuration(v)
			if err != nil || c.RequestTimeout <= 0 {
				return fmt.Errorf("must be a positive duration such as 30s")
			}
			return nil
		}},
	{Env: "ONAIR_METRICS_ADDR", Flag: "metrics-addr", Help: "serve /metrics on this address instead of the public HTTP port",
		set: func(c *Config, v string) error {
			c.MetricsAddr = v
			if v == "" {
				return nil
			}
			return checkAddr(v)
		}},
	{Env: "ONAIR_LOG_FORMAT", Flag: "log-format", Default: "text", Help: "text or json",
		set: func(c *Config, v string) error {
			if v != "text" && v != "json" {
				return fmt.Errorf("must be text or json")
			}
			c.LogFormat = v
			return nil
		}},
	{Env: "ONAIR_LOG_LEVEL", Flag: "log-level", Default: "info", Help: "debug, info, warn or error",
		set: func(c *Config, v string) error {
			switch v {
			case "debug", "info", "warn", "error":
				c.LogLevel = v
				return nil
			}
			return fmt.Errorf("must be debug, info, warn or error")
		}},
}

// AllSettings returns the kernel's settings followed by those of every
// registered module, in registration order: what onair help and README.md
// list.
func AllSettings() ([]Setting, error) {
	return settingsOf(Modules())
}

func settingsOf(modules []Module) ([]Setting, error) {
	all := append([]Setting(nil), kernelSettings...)
	seen := map[string]string{}
	for _, s := range all {
		seen[s.Env], seen["-"+s.Flag] = "the kernel", "the kernel"
	}
	for _, m := range modules {
		c, ok := m.(Configurer)
		if !ok {
			continue
		}
		for _, s := range c.Settings() {
			if !strings.HasPrefix(s.Env, "ONAIR_") || s.Flag == "" || s.Help == "" {
				return nil, fmt.Errorf("module %s: setting %q needs an ONAIR_ name, a flag and a help line", m.Name(), s.Env)
			}
			for _, key := range []string{s.Env, "-" + s.Flag} {
				if owner, dup := seen[key]; dup {
					return nil, fmt.Errorf("module %s: setting %s is already declared by %s", m.Name(), key, owner)
				}
				seen[key] = "module " + m.Name()
			}
			all = append(all, s)
		}
	}
	return all, nil
}

// FlagError is a command line LoadConfig could not parse: an unknown
// flag, a flag without its value, or -h (flag.ErrHelp, which errors.Is
// finds through it).
type FlagError struct{ Err error }

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

// LoadConfig reads the ONAIR_* variables, then the flags in args (which win).
// A bad value is an error that names the variable or flag.
func LoadConfig(fs *flag.FlagSet, args []string, getenv func(string) string) (*Config, error) {
	all, err := AllSettings()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	values := make(map[string]*string, len(all))
	for _, s := range all {
		def := s.Default
		if v := getenv(s.Env); v != "" {
			def = v
		}
		values[s.Env] = fs.String(s.Flag, def, s.Help+" ("+s.Env+")")
	}
	if err := fs.Parse(args); err != nil {
		return nil, &FlagError{Err: err}
	}
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	c := &Config{values: map[string]any{}}
	for _, s := range all {
		if err := c.apply(s, *values[s.Env]); err != nil {
			name := s.Env
			if explicit[s.Flag] {
				name = "-" + s.Flag
			}
			shown := RedactURL(*values[s.Env])
			if s.hidden {
				shown = "***"
			}
			return nil, fmt.Errorf("config: %s=%q: %v", name, shown, err)
		}
	}
	if c.StorageURL == "" {
		abs, err := filepath.Abs(filepath.Join(c.DataDir, "media"))
		if err != nil {
			return nil, fmt.Errorf("config: ONAIR_DATA_DIR: %w", err)
		}
		c.StorageURL = "file://" + abs
	}
	if c.DatabaseURL == "" {
		abs, err := filepath.Abs(filepath.Join(c.DataDir, "onair.db"))
		if err != nil {
			return nil, fmt.Errorf("config: ONAIR_DATA_DIR: %w", err)
		}
		c.DatabaseURL = "sqlite://" + abs
	}
	return c, nil
}

func (c *Config) apply(s Setting, v string) error {
	switch {
	case s.set != nil:
		return s.set(c, v)
	case s.Parse != nil:
		val, err := s.Parse(v)
		if err != nil {
			return err
		}
		c.values[s.Env] = val
	default:
		c.values[s.Env] = v
	}
	return nil
}

// Get returns the value of a module setting as its Parse made it. Asking
// for a setting no module declared, or for the wrong type, is a programming
// error and panics.
func Get[T any](c *Config, env string) T {
	v, ok := c.values[env]
	if !ok {
		panic(fmt.Sprintf("app: setting %s is not declared by any module of this build", env))
	}
	t, ok := v.(T)
	if !ok {
		panic(fmt.Sprintf("app: setting %s is a %T, not a %T", env, v, *new(T)))
	}
	return t
}

// Set replaces the value of a module setting (tests and Configure hooks);
// v must have the type the setting's Parse returns.
func (c *Config) Set(env string, v any) {
	if _, ok := c.values[env]; !ok {
		panic(fmt.Sprintf("app: setting %s is not declared by any module of this build", env))
	}
	c.values[env] = v
}

// SettingsHelp lists the settings for usage messages.
func SettingsHelp() string {
	all, err := AllSettings()
	if err != nil {
		return "  " + err.Error() + "\n"
	}
	var b strings.Builder
	for _, s := range all {
		def := s.Default
		if def == "" {
			def = "(none)"
		}
		fmt.Fprintf(&b, "  %-26s -%-20s default %s\n      %s\n", s.Env, s.Flag, def, s.Help)
	}
	return b.String()
}

// ConfigFromEnv loads the configuration from the environment only.
func ConfigFromEnv() (*Config, error) {
	return LoadConfig(flag.NewFlagSet("onair", flag.ContinueOnError), nil, os.Getenv)
}

// Parsers for module settings (Setting.Parse).

// ParseAddr accepts host:port or :port and returns it as a string.
func ParseAddr(v string) (any, error) { return v, checkAddr(v) }

// ParseOptionalAddr is ParseAddr that also accepts the empty text (off).
func ParseOptionalAddr(v string) (any, error) {
	if v == "" {
		return "", nil
	}
	return ParseAddr(v)
}

// ParseDuration accepts a Go duration of zero or more ("60s", "5m").
func ParseDuration(v string) (any, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return time.Duration(0), fmt.Errorf("must be a duration such as 60s")
	}
	return d, nil
}

// ParsePositiveInt accepts an integer of 1 or more.
func ParsePositiveInt(v string) (any, error) { return parsePositive(v) }

// ParseNonNegativeInt accepts an integer of 0 or more (0 often means off).
func ParseNonNegativeInt(v string) (any, error) { return parseNonNegative(v) }

// ParseBoolSetting accepts true/false (also 1/0).
func ParseBoolSetting(v string) (any, error) {
	b, err := ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("must be true or false")
	}
	return b, nil
}

// ParseURLSetting returns a Parse that accepts an absolute URL with one
// of the schemes (the empty text too, when optional).
func ParseURLSetting(optional bool, schemes ...string) func(string) (any, error) {
	return func(v string) (any, error) {
		if v == "" && optional {
			return "", nil
		}
		return v, checkURL(v, schemes...)
	}
}

func parsePositive(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("must be a positive integer")
	}
	return n, nil
}

func parseNonNegative(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("must be an integer of 0 or more")
	}
	return n, nil
}

func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseNetworks reads "10.0.0.1, 192.168.0.0/16, ::1": single addresses
// become /32 (or /128) networks.
func parseNetworks(v string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, p := range splitList(v) {
		if !strings.Contains(p, "/") {
			ip := net.ParseIP(p)
			if ip == nil {
				return nil, fmt.Errorf("%q is not an IP address or CIDR network", p)
			}
			bits := 128
			if ip.To4() != nil {
				ip, bits = ip.To4(), 32
			}
			out = append(out, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
			continue
		}
		_, n, err := net.ParseCIDR(p)
		if err != nil {
			return nil, fmt.Errorf("%q is not an IP address or CIDR network", p)
		}
		out = append(out, n)
	}
	return out, nil
}

func checkAddr(v string) error {
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return fmt.Errorf("must be host:port or :port")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port must be a number from 0 to 65535")
	}
	return nil
}

// checkOrigin accepts what a browser sends as Origin: scheme://host[:port],
// with no path, query or credentials; "*." may open the host (subdomains).
func checkOrigin(o string) error {
	if o == "*" {
		return nil
	}
	if err := checkURL(o, "http", "https"); err != nil {
		return err
	}
	u, _ := url.Parse(o)
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("an origin is scheme://host[:port], nothing more")
	}
	if strings.Contains(strings.TrimPrefix(u.Host, "*."), "*") {
		return fmt.Errorf("* may only open the host, as in https://*.example.com")
	}
	return nil
}

func checkURL(v string, schemes ...string) error {
	u, err := url.Parse(v)
	if err != nil || u.Host == "" {
		return fmt.Errorf("must be an absolute URL (%s://host...)", schemes[0])
	}
	for _, s := range schemes {
		if u.Scheme == s {
			return nil
		}
	}
	return fmt.Errorf("scheme must be %s", strings.Join(schemes, " or "))
}
