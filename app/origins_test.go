package app

import (
	"strings"
	"testing"
)

// ONAIR_CORS_ORIGINS takes what browsers send as Origin, or "*" alone; a
// value Fiber's CORS middleware would panic on stops start-up instead,
// naming the variable.
func TestCORSOriginsSetting(t *testing.T) {
	for _, ok := range []string{"*", "https://app.example", "http://localhost:3000, https://app.example/", "https://*.partner.example"} {
		if _, err := loadConfig(t, map[string]string{"ONAIR_CORS_ORIGINS": ok}); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"example.com", "*, https://app.example", "https://app.example/path", "https://app.example?x=1",
		"https://user@app.example", "https://app.*.example", "ftp://app.example", ","} {
		_, err := loadConfig(t, map[string]string{"ONAIR_CORS_ORIGINS": bad})
		if err == nil || !strings.Contains(err.Error(), "ONAIR_CORS_ORIGINS") {
			t.Errorf("%q: error %v", bad, err)
		}
	}
}
