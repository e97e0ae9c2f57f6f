package restream_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live"
	"github.com/onair/onair/modules/restream"
	"github.com/onair/onair/modules/webhooks"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key
// to dir, and returns them with a pool that trusts the certificate.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "onair relay target"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, pool
}

// TestRestreamOverRTMPS: an rtmps:// destination pushes over TLS to the
// RTMPS listener of a second OnAir (B) whose certificate is self-signed.
// Not trusted, the destination retries with the certificate error in
// health; once its authority is trusted, the push connects, B's show
// goes live over RTMPS and its HLS decodes. The key is never in A's log.
func TestRestreamOverRTMPS(t *testing.T) {
	requireTools(t, "ffmpeg", "ffprobe")
	certFile, keyFile, pool := selfSigned(t, t.TempDir())
	b := onairtest.New(t, onairtest.Options{Configure: func(c *app.Config) {
		c.Set(live.SettingRTMPSAddr, "127.0.0.1:0")
		c.Set(live.SettingTLSCert, certFile)
		c.Set(live.SettingTLSKey, keyFile)
	}})
	bm, _ := onairtest.Module[*live.Module](b)
	_, btok := b.CreateUser("TLS Target")
	relayed := onairtest.CreateShow(t, b, btok, map[string]any{"name": "Relayed over TLS", "description": "restream"})
	bShow, bKey := relayed.ID, relayed.Key

	a := onairtest.New(t, onairtest.Options{Configure: func(c *app.Config) { c.Set(webhooks.SettingAllowPrivate, true) }})
	rm, _ := onairtest.Module[*restream.Module](a)
	rm.SetBackoff(100 * time.Millisecond)
	_, atok := a.CreateUser("Dee Jay")
	a.Do("POST", "/v1/destinations", atok, map[string]any{"name": "Over TLS", "url": "rtmps://" + bm.RTMPSAddr() + "/live/" + bKey}).
		Expect(t, http.StatusCreated)
	source := onairtest.CreateShow(t, a, atok, map[string]any{"name": "Source Set", "description": "restream"})
	aShow, aKey := source.ID, source.Key
	lm, _ := onairtest.Module[*live.Module](a)
	publish(t, "rtmp://"+lm.RTMPAddr()+"/live/"+aKey)

	// B's certificate is no authority A knows: a TLS error, retried.
	testload.Poll(t, "the destination retrying on B's unknown certificate", func() error {
		dh := destination(health(t, a, atok, aShow))
		if dh == nil || dh["state"] != restream.StateRetrying || !strings.Contains(fmt.Sprint(dh["error"]), "certificate") {
			return fmt.Errorf("destination health %v", dh)
		}
		return nil
	})
	if onairtest.GetShow(t, b, btok, bShow)["live"] == true {
		t.Fatal("B went live through an unverified TLS connection")
	}

	rm.SetRoots(pool)
	trusted := time.Now()
	testload.Poll(t, "the destination connected over TLS", func() error {
		dh := destination(health(t, a, atok, aShow))
		if dh == nil || dh["state"] != restream.StateConnected || dh["bitrate"].(float64) <= 0 {
			return fmt.Errorf("destination health %v", dh)
		}
		return nil
	})
	var bs map[string]any
	testload.Poll(t, "B live over RTMPS", func() error {
		if bs = onairtest.GetShow(t, b, btok, bShow); bs["live"] != true {
			return fmt.Errorf("B's show: %v", bs)
		}
		return nil
	})
	t.Logf("B live over RTMPS %.2f s after its certificate was trusted", time.Since(trusted).Seconds())
	if bh := health(t, b, btok, bShow); bh["receiving"] != true || bh["protocol"] != "rtmps" {
		t.Errorf("B's health %v, want receiving over rtmps", bh)
	}
	if got := probe(t, bs["video_url"].(string)); !strings.Contains(got, "h264 240p") || !strings.Contains(got, "aac") {
		t.Fatalf("B's HLS: %q", got)
	}
	if strings.Contains(a.Logs(), bKey) {
		t.Error("A logged the destination's key")
	}
}
