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
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"
)

// Pods on the real node reach the API server as in any cluster: through
// the kubernetes Service (KUBERNETES_SERVICE_HOST, ClusterIP 10.96.0.1:443),
// which in-cluster clients such as the chart's node agent and webhook use.
// There is no kube-proxy here (nothing else needs Services, and kwok's
// pods have no routable endpoints), so one NAT rule does its one job:
// traffic from the pod subnet to that ClusterIP goes to the API server on
// loopback. route_localnet lets the kernel route such packets to and from
// 127.0.0.1. Nothing leaves the machine: the pod subnet has no masquerade.
const (
	// KubernetesServiceIP is the first address of --service-cluster-ip-range.
	KubernetesServiceIP = "10.96.0.1"
	// serviceCIDR is --service-cluster-ip-range, the pods' one route.
	serviceCIDR       = "10.96.0.0/16"
	natComment        = "accel-dra-e2e: kubernetes Service to the API server"
	routeLocalnetPath = "/proc/sys/net/ipv4/conf/all/route_localnet"
)

// serviceRule is the iptables rule of the nat table (after -A/-D) for
// apiserver, an https://127.0.0.1:PORT URL.
func serviceRule(apiserver string) ([]string, error) {
	u, err := url.Parse(apiserver)
	if err != nil {
		return nil, fmt.Errorf("parsing the API server's URL %q: %w", apiserver, err)
	}
	return []string{"PREROUTING", "-s", podSubnet, "-d", KubernetesServiceIP + "/32", "-p", "tcp", "--dport", "443",
		"-m", "comment", "--comment", natComment, "-j", "DNAT", "--to-destination", u.Host}, nil
}

// routeServiceToAPIServer installs the rule and turns route_localnet on,
// recording both in the state so Teardown undoes them.
func (c *Cluster) routeServiceToAPIServer(ctx context.Context) error {
	rule, err := serviceRule(c.apiserverURL)
	if err != nil {
		return err
	}
	prev, err := os.ReadFile(routeLocalnetPath)
	if err != nil {
		return fmt.Errorf("reading %s: %w", routeLocalnetPath, err)
	}
	c.State.RouteLocalnetBefore = strings.TrimSpace(string(prev))
	c.State.ServiceRule = rule
	if err := c.saveState(); err != nil {
		return err
	}
	if err := os.WriteFile(routeLocalnetPath, []byte("1\n"), 0o644); err != nil {
		return fmt.Errorf("turning on route_localnet for the kubernetes Service rule: %w", err)
	}
	if err := removeStaleServiceRules(ctx, c.opts.Logf); err != nil {
		return err
	}
	if _, err := runContext(ctx, 10*time.Second, "iptables", append([]string{"-t", "nat", "-A"}, rule...)...); err != nil {
		return fmt.Errorf("adding the kubernetes Service rule (apt install iptables): %w", err)
	}
	return nil
}

// removeStaleServiceRules deletes the rules of earlier clusters that
// were killed before their Teardown (a CI job stopped mid-run, a killed
// session). Such a rule comes first in the chain and sends this cluster's
// pods to an API server that is gone, so the chart's agent never gets
// ready. Only one e2e cluster runs on a machine at a time: every rule
// with our comment is stale here.
func removeStaleServiceRules(ctx context.Context, say func(string, ...any)) error {
	out, err := runContext(ctx, 10*time.Second, "iptables", "-t", "nat", "-L", "PREROUTING", "-n", "--line-numbers")
	if err != nil {
		return fmt.Errorf("listing the nat PREROUTING rules for stale kubernetes Service rules (apt install iptables): %w", err)
	}
	var stale []string
	for _, line := range strings.Split(out.stdout, "\n") {
		if fields := strings.Fields(line); len(fields) > 0 && strings.Contains(line, natComment) {
			stale = append(stale, fields[0])
		}
	}
	// From the last, so the numbers of the ones before stay valid.
	for i := len(stale) - 1; i >= 0; i-- {
		say("Removing a stale kubernetes Service rule of an earlier cluster (PREROUTING rule %s)", stale[i])
		if _, err := runContext(ctx, 10*time.Second, "iptables", "-t", "nat", "-D", "PREROUTING", stale[i]); err != nil {
			return fmt.Errorf("removing the stale kubernetes Service rule %s: %w", stale[i], err)
		}
	}
	return nil
}

// unrouteService removes what routeServiceToAPIServer installed.
func unrouteService(st State, say func(string, ...any)) {
	if len(st.ServiceRule) > 0 {
		args := append([]string{"-t", "nat", "-D"}, st.ServiceRule...)
		if _, err := run(10*time.Second, "iptables", args...); err != nil && !strings.Contains(err.Error(), "does a matching rule exist") {
			say("Teardown: removing the kubernetes Service rule: %v", err)
		}
	}
	if st.RouteLocalnetBefore != "" {
		if err := os.WriteFile(routeLocalnetPath, []byte(st.RouteLocalnetBefore+"\n"), 0o644); err != nil {
			say("Teardown: restoring route_localnet: %v", err)
		}
	}
}
