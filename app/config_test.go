package app

import (
	"flag"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func loadConfig(t *testing.T, env map[string]string, args ...string) (*Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return LoadConfig(fs, args, envOf(env))
}

func TestConfigDefaults(t *testing.T) {
	c, err := loadConfig(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs("data/onair.db")
	media, _ := filepath.Abs("data/media")
	want := Config{
		HTTPAddr: ":8080", PublicURL: "http://localhost:8080", DataDir: "./data",
		DatabaseURL: "sqlite://" + abs, StorageURL: "file://" + media, RedisPrefix: "onair:", RateLimit: 600,
		AuthFailures: 20, CORSOrigins: []string{"*"}, MaxConnsPerIP: 256,
		RequestTimeout: 30 * time.Second, LogFormat: "text", LogLevel: "info",
	}
	c.values = nil // the modules' settings (app_test registers the modules)
	if !reflect.DeepEqual(*c, want) {
		t.Fatalf("defaults\n got %+v\nwant %+v", *c, want)
	}
}

func TestConfigSources(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		args  []string
		check func(c *Config) bool
	}{
		{"env sets a value", map[string]string{"ONAIR_HTTP_ADDR": "127.0.0.1:9000"}, nil,
			func(c *Config) bool { return c.HTTPAddr == "127.0.0.1:9000" }},
		{"flag overrides env", map[string]string{"ONAIR_HTTP_ADDR": "127.0.0.1:9000"}, []string{"-http-addr", ":9001"},
			func(c *Config) bool { return c.HTTPAddr == ":9001" }},
		{"double-dash flag", nil, []string{"--rate-limit=5"},
			func(c *Config) bool { return c.RateLimit == 5 }},
		{"public URL loses its trailing slash", map[string]string{"ONAIR_PUBLIC_URL": "https://onair.example/"}, nil,
			func(c *Config) bool { return c.PublicURL == "https://onair.example" }},
		{"database URL defaults into the data dir", map[string]string{"ONAIR_DATA_DIR": "/srv/onair"}, nil,
			func(c *Config) bool { return c.DatabaseURL == "sqlite:///srv/onair/onair.db" }},
		{"mysql database URL kept", map[string]string{"ONAIR_DATABASE_URL": "mysql://u:p@db:3306/onair"}, nil,
			func(c *Config) bool { return c.DatabaseURL == "mysql://u:p@db:3306/onair" }},
		{"redis URL", map[string]string{"ONAIR_REDIS_URL": "redis://127.0.0.1:6379/0"}, nil,
			func(c *Config) bool { return c.RedisURL == "redis://127.0.0.1:6379/0" }},
		{"json logs at debug", map[string]string{"ONAIR_LOG_FORMAT": "json", "ONAIR_LOG_LEVEL": "debug"}, nil,
			func(c *Config) bool { return c.LogFormat == "json" && c.LogLevel == "debug" }},
		{"trusted proxies", map[string]string{"ONAIR_TRUSTED_PROXIES": "10.0.0.1, 192.168.0.0/16,::1"}, nil,
			func(c *Config) bool {
				return len(c.TrustedProxies) == 3 && c.TrustedProxies[0].String() == "10.0.0.1/32" &&
					c.TrustedProxies[1].String() == "192.168.0.0/16" && c.TrustedProxies[2].String() == "::1/128"
			}},
		{"cors origins", map[string]string{"ONAIR_CORS_ORIGINS": "https://a.example, http://localhost:3000"}, nil,
			func(c *Config) bool {
				return reflect.DeepEqual(c.CORSOrigins, []string{"https://a.example", "http://localhost:3000"})
			}},
		{"metrics address", map[string]string{"ONAIR_METRICS_ADDR": "127.0.0.1:9100"}, nil,
			func(c *Config) bool { return c.MetricsAddr == "127.0.0.1:9100" }},
		{"s3 storage", map[string]string{"ONAIR_STORAGE_URL": "s3://AK:SK@127.0.0.1:9000/media?secure=false"}, nil,
			func(c *Config) bool { return c.StorageURL == "s3://AK:SK@127.0.0.1:9000/media?secure=false" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := loadConfig(t, tt.env, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(c) {
				t.Fatalf("unexpected config %+v", *c)
			}
		})
	}
}

// Every bad value stops start-up with a message that names the variable
// (or the flag, when the flag gave the value).
func TestConfigBadValues(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"public URL with another scheme", map[string]string{"ONAIR_PUBLIC_URL": "ftp://x"}, nil, "ONAIR_PUBLIC_URL"},
		{"public URL not absolute", map[string]string{"ONAIR_PUBLIC_URL": "localhost"}, nil, "ONAIR_PUBLIC_URL"},
		{"public URL with a query", map[string]string{"ONAIR_PUBLIC_URL": "http://x/?a=1"}, nil, "ONAIR_PUBLIC_URL"},
		{"http addr nonsense", map[string]string{"ONAIR_HTTP_ADDR": "nonsense"}, nil, "ONAIR_HTTP_ADDR"},
		{"http addr port not a number", map[string]string{"ONAIR_HTTP_ADDR": ":http-alt"}, nil, "ONAIR_HTTP_ADDR"},
		{"http addr port out of range", map[string]string{"ONAIR_HTTP_ADDR": ":70000"}, nil, "ONAIR_HTTP_ADDR"},
		{"postgres database", map[string]string{"ONAIR_DATABASE_URL": "postgres://u@h/db"}, nil, "ONAIR_DATABASE_URL"},
		{"mysql without database", map[string]string{"ONAIR_DATABASE_URL": "mysql://u@h:3306/"}, nil, "ONAIR_DATABASE_URL"},
		{"sqlite without path", map[string]string{"ONAIR_DATABASE_URL": "sqlite://"}, nil, "ONAIR_DATABASE_URL"},
		{"redis with another scheme", map[string]string{"ONAIR_REDIS_URL": "http://h:6379"}, nil, "ONAIR_REDIS_URL"},
		{"trusted proxy not an address", map[string]string{"ONAIR_TRUSTED_PROXIES": "proxy.local"}, nil, "ONAIR_TRUSTED_PROXIES"},
		{"cors origin not a URL", map[string]string{"ONAIR_CORS_ORIGINS": "example.com"}, nil, "ONAIR_CORS_ORIGINS"},
		{"negative connection cap", map[string]string{"ONAIR_MAX_CONNS": "-1"}, nil, "ONAIR_MAX_CONNS"},
		{"per-address cap zero", map[string]string{"ONAIR_MAX_CONNS_PER_IP": "0"}, nil, "ONAIR_MAX_CONNS_PER_IP"},
		{"auth failures zero", map[string]string{"ONAIR_AUTH_FAILURES": "0"}, nil, "ONAIR_AUTH_FAILURES"},
		{"request timeout zero", map[string]string{"ONAIR_REQUEST_TIMEOUT": "0s"}, nil, "ONAIR_REQUEST_TIMEOUT"},
		{"metrics addr", map[string]string{"ONAIR_METRICS_ADDR": "9100"}, nil, "ONAIR_METRICS_ADDR"},
		{"storage with another scheme", map[string]string{"ONAIR_STORAGE_URL": "ftp://h/media"}, nil, "ONAIR_STORAGE_URL"},
		{"s3 storage without keys", map[string]string{"ONAIR_STORAGE_URL": "s3://h:9000/media"}, nil, "ONAIR_STORAGE_URL"},
		{"rate limit zero", map[string]string{"ONAIR_RATE_LIMIT": "0"}, nil, "ONAIR_RATE_LIMIT"},
		{"rate limit words", map[string]string{"ONAIR_RATE_LIMIT": "many"}, nil, "ONAIR_RATE_LIMIT"},
		{"log format", map[string]string{"ONAIR_LOG_FORMAT": "xml"}, nil, "ONAIR_LOG_FORMAT"},
		{"log level", map[string]string{"ONAIR_LOG_LEVEL": "loud"}, nil, "ONAIR_LOG_LEVEL"},
		{"bad flag value names the flag", nil, []string{"-rate-limit", "-3"}, "-rate-limit"},
		{"unknown flag", nil, []string{"-nope"}, "nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadConfig(t, tt.env, tt.args...)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not name %s", err, tt.want)
			}
		})
	}
}

func TestParseDatabaseURL(t *testing.T) {
	tests := []struct {
		raw, driver, dsnHas string
	}{
		{"sqlite:///var/lib/onair/onair.db", "sqlite", "file:/var/lib/onair/onair.db?"},
		{"sqlite://rel.db", "sqlite", "file:rel.db?"},
		{"sqlite::memory:", "sqlite", "file::memory:"},
		{"mysql://root@127.0.0.1:3306/test", "mysql", "root@tcp(127.0.0.1:3306)/test?"},
		{"mysql://u:p%40ss@db/onair", "mysql", "u:p@ss@tcp(db:3306)/onair?"},
		{"mysql://u@db:3306/onair?tls=true", "mysql", "tls=true"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			driver, dsn, err := ParseDatabaseURL(tt.raw)
			if err != nil {
				t.Fatal(err)
			}
			if driver != tt.driver || !strings.Contains(dsn, tt.dsnHas) {
				t.Fatalf("got %s %q, want %s containing %q", driver, dsn, tt.driver, tt.dsnHas)
			}
			if driver == "mysql" && !strings.Contains(dsn, "parseTime=true") {
				t.Fatalf("mysql DSN without parseTime: %s", dsn)
			}
		})
	}
}

// A bad value that carries a secret is named without the secret.
func TestConfigErrorsHideSecrets(t *testing.T) {
	_, err := loadConfig(t, map[string]string{"ONAIR_STORAGE_URL": "s3://AK:topsecret@h:9000/Bad_Bucket"})
	if err == nil || !strings.Contains(err.Error(), "ONAIR_STORAGE_URL") || strings.Contains(err.Error(), "topsecret") {
		t.Fatalf("error %v", err)
	}
}

func TestRedactURL(t *testing.T) {
	if got := RedactURL("mysql://u:secret@h:3306/db"); got != "mysql://u:***@h:3306/db" {
		t.Fatalf("got %s", got)
	}
	if got := RedactURL("sqlite:///x/onair.db"); got != "sqlite:///x/onair.db" {
		t.Fatalf("got %s", got)
	}
}

func TestSecretKeyNeverShown(t *testing.T) {
	short := "tooshort-but-secret"
	_, err := loadConfig(t, map[string]string{"ONAIR_SECRET_KEY": short})
	if err == nil || !strings.Contains(err.Error(), "ONAIR_SECRET_KEY") || strings.Contains(err.Error(), short) {
		t.Fatalf("a short ONAIR_SECRET_KEY: %v (must be refused, named, and not shown)", err)
	}
	long := strings.Repeat("k", 40)
	c, err := loadConfig(t, map[string]string{"ONAIR_SECRET_KEY": long})
	if err != nil || c.SecretKey != long {
		t.Fatalf("ONAIR_SECRET_KEY of 40 characters: %v", err)
	}
}
