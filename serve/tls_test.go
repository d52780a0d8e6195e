package serve

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key
// as PEM files and returns their paths and the certificate.
func selfSigned(t *testing.T) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "skewlens test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err = x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, cert
}

func TestTLS(t *testing.T) {
	t.Parallel()
	certFile, keyFile, cert := selfSigned(t)
	store := newFakeStore(testPlan(jobID, "T", 1, time.Now(), "k"))
	s, _ := newTestServer(t, Config{TLSCertFile: certFile, TLSKeyFile: keyFile}, store)
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	defer func() {
		s.Stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer client.CloseIdleConnections()
	base := "https://" + s.Addr()

	resp, err := client.Get(base + "/v1/salting/" + jobID + "/T")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"task_name":"T"`) {
		t.Errorf("GET over TLS: %d %.200s", resp.StatusCode, body)
	}
	if resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 {
		t.Errorf("TLS state %+v", resp.TLS)
	}
	// A write with a token works over TLS too.
	req, _ := http.NewRequest("POST", base+"/v1/salting/"+jobID+"/T/pin", nil)
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	if resp, err := client.Do(req); err != nil || resp.StatusCode != 201 {
		t.Errorf("pin over TLS: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// A client that does not trust the certificate fails; so does TLS 1.1.
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Error("an untrusting client connected")
	}
	old := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}}}
	if _, err := old.Get(base + "/healthz"); err == nil {
		t.Error("a TLS 1.1 client connected")
	}
	// Plain HTTP gets no answer from the TLS port but a 400.
	if resp, err := http.Get("http://" + s.Addr() + "/healthz"); err == nil {
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP to the TLS port: %d", resp.StatusCode)
		}
		resp.Body.Close()
	}
}

func TestTLSBadFiles(t *testing.T) {
	t.Parallel()
	certFile, keyFile, _ := selfSigned(t)
	missing := filepath.Join(t.TempDir(), "missing.pem")
	for _, c := range []Config{
		{TLSCertFile: missing, TLSKeyFile: keyFile},
		{TLSCertFile: certFile, TLSKeyFile: certFile},
		{TLSCertFile: certFile},
	} {
		c.Addr = "127.0.0.1:0"
		if s, err := New(c, storeOf(newFakeStore()), nil, nil); err == nil {
			s.Stop()
			t.Errorf("New(%+v): want an error", c)
		}
	}
}
