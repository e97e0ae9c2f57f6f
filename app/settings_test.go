package app_test

import (
	"flag"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/app"
	_ "github.com/onair/onair/modules"
	"github.com/onair/onair/modules/live"
	"github.com/onair/onair/modules/shows"
)

func load(env map[string]string, args ...string) (*app.Config, error) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return app.LoadConfig(fs, args, func(k string) string { return env[k] })
}

// Modules declare their own settings; the kernel reads them from the
// environment and flags like its own and hands them back typed.
func TestModuleSettings(t *testing.T) {
	c, err := load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := app.Get[string](c, live.SettingRTMPAddr); got != ":1935" {
		t.Errorf("default rtmp addr %q", got)
	}
	if got := app.Get[time.Duration](c, shows.SettingReconnectWindow); got != 60*time.Second {
		t.Errorf("default reconnect window %v", got)
	}
	c, err = load(map[string]string{"ONAIR_RTMP_URL": "rtmps://live.example/app", "ONAIR_RECONNECT_WINDOW": "90s"}, "-rtmp-addr", "0.0.0.0:1936")
	if err != nil {
		t.Fatal(err)
	}
	if got := app.Get[string](c, shows.SettingRTMPURL); got != "rtmps://live.example/app" {
		t.Errorf("rtmp url %q", got)
	}
	if got := app.Get[string](c, live.SettingRTMPAddr); got != "0.0.0.0:1936" {
		t.Errorf("rtmp addr from the flag %q", got)
	}
	if got := app.Get[time.Duration](c, shows.SettingReconnectWindow); got != 90*time.Second {
		t.Errorf("reconnect window %v", got)
	}
}

// A bad value of a module's setting stops start-up naming it, as the
// kernel's own do.
func TestModuleSettingsBadValues(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"rtmp addr", map[string]string{"ONAIR_RTMP_ADDR": "1935"}, nil, "ONAIR_RTMP_ADDR"},
		{"rtmp URL http", map[string]string{"ONAIR_RTMP_URL": "http://x/live"}, nil, "ONAIR_RTMP_URL"},
		{"reconnect window", map[string]string{"ONAIR_RECONNECT_WINDOW": "soon"}, nil, "ONAIR_RECONNECT_WINDOW"},
		{"negative reconnect window", map[string]string{"ONAIR_RECONNECT_WINDOW": "-1s"}, nil, "ONAIR_RECONNECT_WINDOW"},
		{"bad flag names the flag", nil, []string{"-reconnect-window", "later"}, "-reconnect-window"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(tt.env, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v does not name %s", err, tt.want)
			}
		})
	}
}

// README.md's settings table lists every setting of the build, the
// kernel's and every module's, once, with exactly its flag and default (or,
// for a setting without one, words rather than a literal value) and a
// meaning, and nothing else; onair help lists the same. Each flag is its
// variable's name ("a flag of the same name").
func TestReadmeListsEverySetting(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ flag, def, meaning string }
	rows := map[string]row{}
	for _, line := range strings.Split(string(readme), "\n") {
		if !strings.HasPrefix(line, "| `ONAIR_") {
			continue
		}
		cols := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cols) != 4 {
			t.Errorf("README.md settings row has %d columns, not 4 (variable, flag, default, meaning): %s", len(cols), line)
			continue
		}
		for i := range cols {
			cols[i] = strings.TrimSpace(cols[i])
		}
		env := strings.Trim(cols[0], "`")
		if _, dup := rows[env]; dup {
			t.Errorf("README.md lists %s twice", env)
		}
		rows[env] = row{cols[1], cols[2], cols[3]}
	}
	all, err := app.AllSettings()
	if err != nil {
		t.Fatal(err)
	}
	help := app.SettingsHelp()
	literal := regexp.MustCompile("^`[^`]*`$")
	for _, s := range all {
		if want := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(s.Env, "ONAIR_")), "_", "-"); s.Flag != want {
			t.Errorf("%s has the flag -%s, not -%s", s.Env, s.Flag, want)
		}
		if !strings.Contains(help, s.Env) || !strings.Contains(help, "-"+s.Flag) {
			t.Errorf("onair help does not list %s (-%s)", s.Env, s.Flag)
		}
		r, ok := rows[s.Env]
		if !ok {
			t.Errorf("README.md has no row for %s", s.Env)
			continue
		}
		delete(rows, s.Env)
		if r.flag != "`-"+s.Flag+"`" {
			t.Errorf("README.md row of %s: flag %s, want `-%s`", s.Env, r.flag, s.Flag)
		}
		switch {
		case s.Default != "" && r.def != "`"+s.Default+"`":
			t.Errorf("README.md row of %s: default %s, want `%s`", s.Env, r.def, s.Default)
		case s.Default == "" && (r.def == "" || literal.MatchString(r.def)):
			t.Errorf("README.md row of %s: default %q, but the setting has no literal default (say none, or what it falls back to)", s.Env, r.def)
		}
		if r.meaning == "" {
			t.Errorf("README.md row of %s has no meaning", s.Env)
		}
	}
	for env := range rows {
		t.Errorf("README.md documents %s, which no setting of this build declares", env)
	}
}
