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

package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
)

// certReloader serves the certificate and key found in two files and
// picks up new contents without a restart: a Secret volume updated by
// cert-manager or by hand (the kubelet swaps the files atomically), or any
// other rewrite of the files. A pair that does not load (a key that does
// not match, a file half written) keeps the previous certificate in use
// and is retried.
type certReloader struct {
	certFile, keyFile string
	current           atomic.Pointer[loadedCert]
	lastErr           string
}

type loadedCert struct {
	cert            *tls.Certificate
	certPEM, keyPEM []byte
}

// newCertReloader loads the pair once; a pair that does not load is an
// error, so a misconfigured webhook fails at start instead of at the first
// handshake.
func newCertReloader(ctx context.Context, certFile, keyFile string) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile}
	if _, err := r.reload(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// reload reads both files and switches to them when they changed and load.
func (r *certReloader) reload(ctx context.Context) (bool, error) {
	certPEM, err := os.ReadFile(r.certFile)
	if err != nil {
		return false, fmt.Errorf("reading serving certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(r.keyFile)
	if err != nil {
		return false, fmt.Errorf("reading serving key: %w", err)
	}
	if cur := r.current.Load(); cur != nil && bytes.Equal(cur.certPEM, certPEM) && bytes.Equal(cur.keyPEM, keyPEM) {
		return false, nil
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return false, fmt.Errorf("loading serving certificate %s with key %s: %w", r.certFile, r.keyFile, err)
	}
	r.current.Store(&loadedCert{cert: &cert, certPEM: certPEM, keyPEM: keyPEM})
	if leaf := cert.Leaf; leaf != nil {
		klog.FromContext(ctx).Info("Loaded serving certificate", "certFile", r.certFile, "subject", leaf.Subject.String(),
			"dnsNames", leaf.DNSNames, "serial", leaf.SerialNumber.String(), "notAfter", leaf.NotAfter)
	}
	return true, nil
}

// run re-reads the files every interval until ctx is done.
func (r *certReloader) run(ctx context.Context, interval time.Duration) {
	logger := klog.FromContext(ctx)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_, err := r.reload(ctx)
		switch {
		case err != nil && err.Error() != r.lastErr:
			logger.Error(err, "Reloading serving certificate failed, still serving the previous one")
			r.lastErr = err.Error()
		case err == nil && r.lastErr != "":
			r.lastErr = ""
		}
	}
}

// getCertificate is tls.Config.GetCertificate.
func (r *certReloader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.current.Load().cert, nil
}
