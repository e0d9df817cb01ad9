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

// Package livecluster reads the DRA state of a live cluster for the CLI's
// cluster-facing views (accel-dra chips, accel-dra why): it connects with
// the user's kubeconfig exactly as kubectl does, lists the objects those
// views need, and turns the API server's refusals into one line that says
// what to do. It never writes to the cluster.
package livecluster

import (
	"errors"
	"fmt"
	"net"
	"net/url"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ViewerRole is the chart's read-only ClusterRole for these views.
const ViewerRole = "accel-dra-viewer"

// Flags are kubectl's connection flags (--kubeconfig, --context, -n,
// --server, --token, ...; KUBECONFIG is honoured) plus -A.
type Flags struct {
	loading   *clientcmd.ClientConfigLoadingRules
	overrides clientcmd.ConfigOverrides
	// AllNamespaces is -A / --all-namespaces.
	AllNamespaces bool
}

// AddFlags registers the connection flags on fs, with kubectl's names.
func AddFlags(fs *pflag.FlagSet) *Flags {
	f := &Flags{loading: clientcmd.NewDefaultClientConfigLoadingRules()}
	fs.StringVar(&f.loading.ExplicitPath, clientcmd.RecommendedConfigPathFlag, "", "Path to the kubeconfig file to use (default: $KUBECONFIG, else ~/.kube/config)")
	clientcmd.BindOverrideFlags(&f.overrides, fs, clientcmd.RecommendedConfigOverrideFlags(""))
	fs.BoolVarP(&f.AllNamespaces, "all-namespaces", "A", false, "If present, list objects across all namespaces (for views that take a namespace)")
	return f
}

// Connection is a client for the cluster and the namespace the user chose
// (-n, else the kubeconfig context's, else "default").
type Connection struct {
	Client kubernetes.Interface
	// Dynamic reads other projects' kinds the views consult (Volcano's
	// PodGroups); a view does without them where it is nil.
	Dynamic   dynamic.Interface
	Namespace string
	// Server is the API server's address, for error messages.
	Server string
}

// Connect builds the client from the kubeconfig and flags. It makes no
// request: a cluster that cannot be reached shows on the first read.
func (f *Flags) Connect() (*Connection, error) {
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(f.loading, &f.overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, fmt.Errorf("no cluster configured: set --kubeconfig or KUBECONFIG, or create ~/.kube/config")
		}
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig's namespace: %w", err)
	}
	return NewConnection(cfg, ns)
}

// NewConnection is a Connection for a rest.Config; the CLI identifies
// itself as accel-dra in the API server's audit log.
func NewConnection(cfg *rest.Config, namespace string) (*Connection, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "accel-dra"
	// Views list every slice and claim of a cluster; the client's default
	// 5 requests/s would throttle a large one.
	cfg.QPS, cfg.Burst = 50, 100
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the Kubernetes client for %s: %w", cfg.Host, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the dynamic client for %s: %w", cfg.Host, err)
	}
	return &Connection{Client: client, Dynamic: dyn, Namespace: namespace, Server: cfg.Host}, nil
}

// explain turns an API error for a read of what (e.g. "list
// resourceclaims.resource.k8s.io at cluster scope") into one line a person
// can act on.
func (c *Connection) explain(what string, err error) error {
	var urlErr *url.Error
	var netErr net.Error
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("not allowed to %s: ask an admin to bind the ClusterRole %s to you (kubectl create clusterrolebinding NAME --clusterrole=%s --user=YOU): %w", what, ViewerRole, ViewerRole, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the API server at %s did not accept your credentials (to %s): check --kubeconfig, --context or --token: %w", c.Server, what, err)
	case errors.As(err, &urlErr) || errors.As(err, &netErr):
		return fmt.Errorf("cannot reach the cluster at %s (to %s): check --kubeconfig and --context: %w", c.Server, what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
