// Command cluster-helper does the two small jobs the cluster scripts would
// otherwise need openssl and curl for:
//
//	cluster-helper certs DIR   writes ca.crt, ca.key, apiserver.crt, apiserver.key,
//	                           sa.key and sa.pub into DIR (existing files are kept)
//	cluster-helper probe URL   one HTTP(S) GET with a 2 s timeout; exit 0 on a 2xx
//	                           answer, 1 otherwise (the answer or error goes to stderr)
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "certs":
		err = certs(os.Args[2])
	case "probe":
		err = probe(os.Args[2])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cluster-helper:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: cluster-helper certs DIR | cluster-helper probe URL")
	os.Exit(2)
}

func probe(url string) error {
	client := &http.Client{
		Timeout: 2 * time.Second,
		Transport: &http.Transport{
			// The probe only asks "is it serving"; the scripts talk to the
			// server with the real CA afterwards.
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // readiness probe on loopback
		},
	}
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s: %s", url, resp.Status, body)
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func certs(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	p := func(name string) string { return filepath.Join(dir, name) }

	if !exists(p("sa.key")) || !exists(p("sa.pub")) {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return err
		}
		pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
		if err != nil {
			return err
		}
		if err := writePEM(p("sa.key"), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key)); err != nil {
			return err
		}
		if err := writePEM(p("sa.pub"), "PUBLIC KEY", pub); err != nil {
			return err
		}
	}

	if exists(p("ca.crt")) && exists(p("ca.key")) && exists(p("apiserver.crt")) && exists(p("apiserver.key")) {
		return nil
	}
	now := time.Now().Add(-time.Hour)
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "ctpool-tui-cluster-ca"},
		NotBefore:             now,
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}

	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now,
		NotAfter:     now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1"), net.ParseIP("10.96.0.1")},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return err
	}

	caKeyDER, err := x509.MarshalECPrivateKey(caKey)
	if err != nil {
		return err
	}
	srvKeyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		return err
	}
	return errors.Join(
		writePEM(p("ca.key"), "EC PRIVATE KEY", caKeyDER),
		writePEM(p("ca.crt"), "CERTIFICATE", caDER),
		writePEM(p("apiserver.key"), "EC PRIVATE KEY", srvKeyDER),
		writePEM(p("apiserver.crt"), "CERTIFICATE", srvDER),
	)
}

func writePEM(path, typ string, der []byte) error {
	data := pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
