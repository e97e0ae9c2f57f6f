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
)

// Config is every setting of the process. Each field comes from an ONAIR_*
// environment variable and can be overridden by the matching flag.
type Config struct {
	HTTPAddr        string
	PublicURL       string
	DataDir         string
	DatabaseURL     string
	RedisURL        string
	RedisPrefix     string
	RTMPAddr        string
	RTMPURL         string
	ReconnectWindow time.Duration
	RateLimit       int
	LogFormat       string
	LogLevel        string
}

// setting describes one configuration value: its variable, flag, default and
// where it lands in Config.
type setting struct {
	Env, Flag, Default, Help string
	set                      func(c *Config, v string) error
}

// Settings lists every setting, in the order README documents them.
var settings = []setting{
	{"ONAIR_HTTP_ADDR", "http-addr", ":8080", "address the HTTP server listens on",
		func(c *Config, v string) error { c.HTTPAddr = v; return checkAddr(v) }},
	{"ONAIR_PUBLIC_URL", "public-url", "http://localhost:8080", "public base URL; every URL in a response is built from it",
		func(c *Config, v string) error {
			c.PublicURL = strings.TrimRight(v, "/")
			if strings.ContainsAny(c.PublicURL, "?#") {
				return fmt.Errorf("must not have a query or fragment")
			}
			return checkURL(c.PublicURL, "http", "https")
		}},
	{"ONAIR_DATA_DIR", "data-dir", "./data", "directory for the SQLite file, recordings and thumbnails",
		func(c *Config, v string) error {
			if v == "" {
				return fmt.Errorf("must not be empty")
			}
			c.DataDir = v
			return nil
		}},
	{"ONAIR_DATABASE_URL", "database-url", "", "sqlite:///path/file.db or mysql://user:pass@host:3306/db (default: SQLite in the data dir)",
		func(c *Config, v string) error {
			c.DatabaseURL = v
			if v == "" {
				return nil
			}
			_, _, err := ParseDatabaseURL(v)
			return err
		}},
	{"ONAIR_REDIS_URL", "redis-url", "", "redis://host:6379/0; enables shared rate limits, chat fan-out and presence across nodes",
		func(c *Config, v string) error {
			c.RedisURL = v
			if v == "" {
				return nil
			}
			return checkURL(v, "redis", "rediss")
		}},
	{"ONAIR_REDIS_PREFIX", "redis-prefix", "onair:", "prefix of every Redis key, so several services can share one Redis",
		func(c *Config, v string) error { c.RedisPrefix = v; return nil }},
	{"ONAIR_RTMP_ADDR", "rtmp-addr", ":1935", "address the RTMP ingest server listens on",
		func(c *Config, v string) error { c.RTMPAddr = v; return checkAddr(v) }},
	{"ONAIR_RTMP_URL", "rtmp-url", "rtmp://localhost:1935/live", "RTMP address given to broadcasters as stream_url",
		func(c *Config, v string) error { c.RTMPURL = v; return checkURL(v, "rtmp", "rtmps") }},
	{"ONAIR_RECONNECT_WINDOW", "reconnect-window", "60s", "how long a dropped live show waits for its publisher",
		func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return fmt.Errorf("must be a duration such as 60s")
			}
			c.ReconnectWindow = d
			return nil
		}},
	{"ONAIR_RATE_LIMIT", "rate-limit", "600", "API requests per minute per token",
		func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return fmt.Errorf("must be a positive integer")
			}
			c.RateLimit = n
			return nil
		}},
	{"ONAIR_LOG_FORMAT", "log-format", "text", "text or json",
		func(c *Config, v string) error {
			if v != "text" && v != "json" {
				return fmt.Errorf("must be text or json")
			}
			c.LogFormat = v
			return nil
		}},
	{"ONAIR_LOG_LEVEL", "log-level", "info", "debug, info, warn or error",
		func(c *Config, v string) error {
			switch v {
			case "debug", "info", "warn", "error":
				c.LogLevel = v
				return nil
			}
			return fmt.Errorf("must be debug, info, warn or error")
		}},
}

// LoadConfig reads the ONAIR_* variables, then the flags in args (which win).
// A bad value is an error that names the variable or flag.
func LoadConfig(fs *flag.FlagSet, args []string, getenv func(string) string) (*Config, error) {
	values := make(map[string]*string, len(settings))
	for _, s := range settings {
		def := s.Default
		if v := getenv(s.Env); v != "" {
			def = v
		}
		values[s.Env] = fs.String(s.Flag, def, s.Help+" ("+s.Env+")")
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	c := &Config{}
	for _, s := range settings {
		if err := s.set(c, *values[s.Env]); err != nil {
			name := s.Env
			if explicit[s.Flag] {
				name = "-" + s.Flag
			}
			return nil, fmt.Errorf("config: %s=%q: %v", name, *values[s.Env], err)
		}
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

// SettingsHelp lists the settings for usage messages.
func SettingsHelp() string {
	var b strings.Builder
	for _, s := range settings {
		def := s.Default
		if def == "" {
			def = "(none)"
		}
		fmt.Fprintf(&b, "  %-24s -%-18s default %s\n      %s\n", s.Env, s.Flag, def, s.Help)
	}
	return b.String()
}

// ConfigFromEnv loads the configuration from the environment only.
func ConfigFromEnv() (*Config, error) {
	return LoadConfig(flag.NewFlagSet("onair", flag.ContinueOnError), nil, os.Getenv)
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
