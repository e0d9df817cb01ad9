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
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// serviceAccountIssuer is the issuer of ServiceAccount tokens.
const serviceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

// startControlPlane makes the PKI and starts etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler on 127.0.0.1.
func (c *Cluster) startControlPlane(ctx context.Context) error {
	ip, err := nodeIP()
	if err != nil {
		return err
	}
	c.State.NodeIP = ip
	pkiDir, err := c.dir("pki")
	if err != nil {
		return err
	}
	if c.pki, err = newPKI(pkiDir); err != nil {
		return err
	}
	etcdURL, err := c.startEtcd(ctx)
	if err != nil {
		return err
	}
	if err := c.startAPIServer(ctx, etcdURL); err != nil {
		return err
	}
	kcm, err := c.pki.client("kube-controller-manager", "system:kube-controller-manager")
	if err != nil {
		return err
	}
	sched, err := c.pki.client("kube-scheduler", "system:kube-scheduler")
	if err != nil {
		return err
	}
	for _, comp := range []struct {
		name  string
		kp    keyPair
		extra []string
	}{
		{"kube-controller-manager", kcm, []string{
			"--controllers=*",
			"--use-service-account-credentials=true",
			"--service-account-private-key-file=" + filepath.Join(pkiDir, "sa.key"),
			"--root-ca-file=" + c.pki.CAFile,
			"--cluster-name=accel-dra-e2e",
		}},
		// The client CA lets it authenticate the admin's certificate on
		// /metrics (the authentication lookup is skipped).
		{"kube-scheduler", sched, []string{"--client-ca-file=" + c.pki.CAFile}},
	} {
		kc, err := c.kubeconfig(comp.name, &comp.kp, "")
		if err != nil {
			return err
		}
		port, err := freePort()
		if err != nil {
			return err
		}
		if comp.name == "kube-controller-manager" {
			comp.extra = append(comp.extra, c.opts.ControllerManagerArgs...)
		}
		if c.opts.ClientQPS > 0 {
			extra, err := c.clientQPSArgs(comp.name, kc)
			if err != nil {
				return err
			}
			comp.extra = append(comp.extra, extra...)
		}
		if comp.name == "kube-scheduler" {
			c.schedulerURL = fmt.Sprintf("https://127.0.0.1:%d", port)
		}
		args := append([]string{
			"--kubeconfig=" + kc,
			"--authentication-kubeconfig=" + kc,
			"--authorization-kubeconfig=" + kc,
			"--authentication-skip-lookup=true",
			"--leader-elect=false",
			"--bind-address=127.0.0.1",
			fmt.Sprintf("--secure-port=%d", port),
			"--v=2",
		}, comp.extra...)
		p, err := c.start(comp.name, nil, c.bin(comp.name), args...)
		if err != nil {
			return err
		}
		if err := waitHealthz(ctx, comp.name, fmt.Sprintf("https://127.0.0.1:%d/healthz", port), p); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) startEtcd(ctx context.Context) (string, error) {
	dataDir, err := c.dir("etcd")
	if err != nil {
		return "", err
	}
	client, err := freePort()
	if err != nil {
		return "", err
	}
	peer, err := freePort()
	if err != nil {
		return "", err
	}
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", client)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	p, err := c.start("etcd", nil, c.bin("etcd"),
		"--name=e2e",
		"--data-dir="+dataDir,
		"--listen-client-urls="+clientURL,
		"--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=e2e="+peerURL,
		"--unsafe-no-fsync",
		"--log-level=warn",
	)
	if err != nil {
		return "", err
	}
	return clientURL, waitHealthz(ctx, "etcd", clientURL+"/health", p)
}

func (c *Cluster) startAPIServer(ctx context.Context, etcdURL string) error {
	certDir, err := c.dir("apiserver")
	if err != nil {
		return err
	}
	serving, err := c.pki.serving("kube-apiserver",
		[]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1"), net.ParseIP(c.State.NodeIP)},
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"})
	if err != nil {
		return err
	}
	kubeletClient, err := c.pki.client("apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters")
	if err != nil {
		return err
	}
	saPub, saKey, err := c.pki.serviceAccountKeys()
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	c.apiserverURL = fmt.Sprintf("https://127.0.0.1:%d", port)
	p, err := c.start("kube-apiserver", nil, c.bin("kube-apiserver"),
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		// No Endpoints for the kubernetes Service on loopback.
		"--endpoint-reconciler-type=none",
		"--cert-dir="+certDir,
		"--tls-cert-file="+serving.CertFile,
		"--tls-private-key-file="+serving.KeyFile,
		"--client-ca-file="+c.pki.CAFile,
		"--authorization-mode=Node,RBAC",
		// ValidatingAdmissionPolicy and the other defaults stay on.
		"--enable-admission-plugins=NodeRestriction",
		"--allow-privileged=true",
		// DeviceTaintRules as Volcano v1.14's kube-scheduler 1.34 code
		// watches them with DRADeviceTaints on (v1alpha3, off by default
		// since 1.36): without it the scheduler never syncs its cache.
		"--runtime-config=resource.k8s.io/v1alpha3=true",
		"--service-account-issuer="+serviceAccountIssuer,
		"--service-account-key-file="+saPub,
		"--service-account-signing-key-file="+saKey,
		"--service-cluster-ip-range="+serviceCIDR,
		"--kubelet-preferred-address-types=InternalIP",
		// Webhooks are called at their endpoints (pod IPs: loopback on
		// kwok nodes), never at a ClusterIP, which nothing here routes
		// and which would leave this machine by its default route.
		"--enable-aggregator-routing=true",
		"--kubelet-client-certificate="+kubeletClient.CertFile,
		"--kubelet-client-key="+kubeletClient.KeyFile,
		"--profiling=false",
		"--v=1",
	)
	if err != nil {
		return err
	}
	admin, err := c.pki.client("admin", "accel-dra-e2e-admin", "system:masters")
	if err != nil {
		return err
	}
	if c.State.Kubeconfig, err = c.kubeconfig("admin", &admin, ""); err != nil {
		return err
	}
	if err := c.saveState(); err != nil {
		return err
	}
	if c.AdminConfig, err = clientcmd.BuildConfigFromFlags("", c.State.Kubeconfig); err != nil {
		return fmt.Errorf("loading admin kubeconfig: %w", err)
	}
	c.AdminConfig.QPS, c.AdminConfig.Burst = 100, 200
	if c.Admin, c.Dynamic, c.Mapper, err = newAdminClients(c.AdminConfig); err != nil {
		return err
	}
	return waitFor(ctx, "kube-apiserver /readyz", 2*time.Minute, p, func(ctx context.Context) (bool, error) {
		body, err := c.Admin.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return false, err
		}
		return strings.TrimSpace(string(body)) == "ok", nil
	})
}

// waitHealthz polls an HTTP(S) health endpoint (self-signed certificates
// of the components are not verified: the endpoint only says "ok").
func waitHealthz(ctx context.Context, name, url string, p *proc) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // health probe only
	return waitFor(ctx, name+" health", 2*time.Minute, p, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("%s: %s", resp.Status, body)
		}
		return true, nil
	})
}

func clientcmdConfig(server, caFile, user string, kp *keyPair, token string) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: caFile}
	ai := &clientcmdapi.AuthInfo{Token: token}
	if kp != nil {
		ai.ClientCertificate, ai.ClientKey = kp.CertFile, kp.KeyFile
	}
	cfg.AuthInfos[user] = ai
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: user}
	cfg.CurrentContext = "e2e"
	return cfg
}

// RESTConfigForToken is a client config that authenticates with token.
func (c *Cluster) RESTConfigForToken(token string) *rest.Config {
	cfg := rest.CopyConfig(c.AdminConfig)
	cfg.CertFile, cfg.KeyFile = "", ""
	cfg.CertData, cfg.KeyData = nil, nil
	cfg.BearerToken = token
	return cfg
}

// clientQPSArgs are the arguments that raise a component's API client
// rate limit to Options.ClientQPS. kube-scheduler takes it only from its
// configuration file, which then also has to carry the kubeconfig and
// leader election (the equivalent flags are ignored with --config).
func (c *Cluster) clientQPSArgs(component, kubeconfig string) ([]string, error) {
	qps := c.opts.ClientQPS
	if component != "kube-scheduler" {
		return []string{fmt.Sprintf("--kube-api-qps=%d", qps), fmt.Sprintf("--kube-api-burst=%d", qps)}, nil
	}
	dir, err := c.dir("kube-scheduler")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "config.yaml")
	cfg := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: %d
  burst: %d
leaderElection:
  leaderElect: false
`, kubeconfig, qps, qps)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return nil, fmt.Errorf("writing the kube-scheduler configuration: %w", err)
	}
	return []string{"--config=" + path}, nil
}
