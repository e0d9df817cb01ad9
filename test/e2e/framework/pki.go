//go:build e2e

// Copyright The accel-dra Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

package framework

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the cluster's certificate authority and the key pairs made from
// it, all written as PEM files under dir.
type pki struct {
	dir    string
	caCert *x509.Certificate
	caKey  crypto.Signer
	// CAFile is the CA certificate every component trusts.
	CAFile string
}

// keyPair is a certificate and its key on disk.
type keyPair struct {
	CertFile, KeyFile string
}

func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating PKI directory: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "accel-dra-e2e-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("creating CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing CA certificate: %w", err)
	}
	p := &pki{dir: dir, caCert: cert, caKey: key, CAFile: filepath.Join(dir, "ca.crt")}
	if err := writePEM(p.CAFile, "CERTIFICATE", der); err != nil {
		return nil, err
	}
	if err := writeKey(filepath.Join(dir, "ca.key"), key); err != nil {
		return nil, err
	}
	return p, nil
}

// serving issues a server certificate for the given IPs and DNS names.
func (p *pki) serving(name string, ips []net.IP, dnsNames []string) (keyPair, error) {
	return p.issue(name, pkix.Name{CommonName: name}, x509.ExtKeyUsageServerAuth, ips, dnsNames)
}

// client issues a client certificate: user cn in the given groups.
func (p *pki) client(name, cn string, groups ...string) (keyPair, error) {
	return p.issue(name, pkix.Name{CommonName: cn, Organization: groups}, x509.ExtKeyUsageClientAuth, nil, nil)
}

func (p *pki) issue(name string, subject pkix.Name, usage x509.ExtKeyUsage, ips []net.IP, dnsNames []string) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("generating key of %s: %w", name, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return keyPair{}, fmt.Errorf("generating serial of %s: %w", name, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		IPAddresses:  ips,
		DNSNames:     dnsNames,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, key.Public(), p.caKey)
	if err != nil {
		return keyPair{}, fmt.Errorf("creating certificate of %s: %w", name, err)
	}
	kp := keyPair{CertFile: filepath.Join(p.dir, name+".crt"), KeyFile: filepath.Join(p.dir, name+".key")}
	if err := writePEM(kp.CertFile, "CERTIFICATE", der); err != nil {
		return keyPair{}, err
	}
	if err := writeKey(kp.KeyFile, key); err != nil {
		return keyPair{}, err
	}
	return kp, nil
}

// serviceAccountKeys writes the key pair that signs and verifies
// ServiceAccount tokens.
func (p *pki) serviceAccountKeys() (pub, priv string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("generating service account key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return "", "", fmt.Errorf("encoding service account public key: %w", err)
	}
	pub, priv = filepath.Join(p.dir, "sa.pub"), filepath.Join(p.dir, "sa.key")
	if err := writePEM(pub, "PUBLIC KEY", pubDER); err != nil {
		return "", "", err
	}
	if err := writeKey(priv, key); err != nil {
		return "", "", err
	}
	return pub, priv, nil
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("encoding key %s: %w", path, err)
	}
	return writePEM(path, "PRIVATE KEY", der)
}

func writePEM(path, typ string, der []byte) error {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// ServingCert issues a serving certificate from the cluster's CA for a
// server the test runs itself (e.g. an admission webhook the API server
// calls by URL) and returns its files and the CA in PEM, for a caBundle.
func (c *Cluster) ServingCert(name string, ips ...net.IP) (certFile, keyFile string, caPEM []byte, err error) {
	kp, err := c.pki.serving(name, ips, nil)
	if err != nil {
		return "", "", nil, err
	}
	caPEM, err = os.ReadFile(c.pki.CAFile)
	if err != nil {
		return "", "", nil, fmt.Errorf("reading the cluster CA: %w", err)
	}
	return kp.CertFile, kp.KeyFile, caPEM, nil
}
