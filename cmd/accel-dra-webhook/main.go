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

// Command accel-dra-webhook is the validating admission webhook of
// accel-dra: it rejects ResourceClaims, ResourceClaimTemplates and
// DeviceClasses whose opaque config for one of accel-dra's drivers
// (ascend.accel-dra.dev, cambricon.accel-dra.dev, … as pkg/vendors/all
// lists them) is bad, when they are applied, with the words the kubelet
// plugin would fail the claim's prepare with.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/pkg/flagenv"
	"github.com/accel-dra/accel-dra/pkg/logflags"
	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/vendors/all"
	"github.com/accel-dra/accel-dra/pkg/webhook"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newCommand(all.Registry()).ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "accel-dra-webhook:", err)
		os.Exit(1)
	}
}

// newCommand is the command of the webhook judging the configs of reg's
// drivers.
func newCommand(reg vendors.Registry) *cobra.Command {
	var o webhook.Options
	var logging *logflags.Config
	cmd := &cobra.Command{
		Use:   "accel-dra-webhook",
		Short: "accel-dra admission webhook: reject bad opaque configs for " + driversHelp(reg) + " when they are applied",
		Long: `accel-dra-webhook is a validating admission webhook (a Deployment behind a
Service, called by the kube-apiserver through a ValidatingWebhookConfiguration).

For ResourceClaims, ResourceClaimTemplates and DeviceClasses of
resource.k8s.io (v1, and v1beta2/v1beta1 where served) it decodes every
spec...config[].opaque.parameters whose driver is one of accel-dra's, strictly
and with the plugin's validation, each of the kind its driver takes:
` + driversHelp(reg) + `.
It denies the object, naming every bad field, e.g.

  spec.devices.config[0].opaque.parameters: decoding: strict decoding error: unknown field "envs" (...)

A config whose requests name a request the claim does not have is denied too.
Configs of other drivers are not looked at.

It serves HTTPS only, on --port:
  ` + webhook.ValidatePath + `  AdmissionReview (admission.k8s.io/v1) of the objects above
  ` + webhook.LivezPath + `                               liveness
  ` + webhook.ReadyzPath + `                              readiness (not ready while shutting down)
The certificate and key are read from --tls-cert-file and
--tls-private-key-file (e.g. a mounted kubernetes.io/tls Secret) and re-read
every --tls-reload-interval, so a renewal by cert-manager or a Secret update
takes effect without a restart. SIGTERM or SIGINT stops it cleanly: /readyz
fails at once, reviews are still served for --shutdown-delay (while the
Service drops the pod), then no new connections are taken and reviews in
flight finish within --shutdown-timeout.

Every flag can also be set by the environment variable in brackets.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := flagenv.Apply(cmd.Flags()); err != nil {
				return err
			}
			if err := logging.Apply(cmd.ErrOrStderr()); err != nil {
				return err
			}
			configs, err := reg.ConfigDecoder()
			if err != nil {
				return err
			}
			o.Configs = configs
			ctx := klog.NewContext(cmd.Context(), klog.Background().WithName("accel-dra-webhook"))
			return webhook.Run(ctx, o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Port, "port", 8443, "HTTPS port for the webhook and its probes [ACCEL_DRA_WEBHOOK_PORT]")
	f.StringVar(&o.CertFile, "tls-cert-file", "/etc/accel-dra-webhook/tls/tls.crt", "PEM serving certificate (leaf first, then intermediates); its SANs must include <service>.<namespace>.svc [ACCEL_DRA_WEBHOOK_TLS_CERT_FILE]")
	f.StringVar(&o.KeyFile, "tls-private-key-file", "/etc/accel-dra-webhook/tls/tls.key", "PEM private key of --tls-cert-file [ACCEL_DRA_WEBHOOK_TLS_PRIVATE_KEY_FILE]")
	f.DurationVar(&o.CertReloadInterval, "tls-reload-interval", 10*time.Second, "how often the certificate and key files are checked for new contents [ACCEL_DRA_WEBHOOK_TLS_RELOAD_INTERVAL]")
	f.DurationVar(&o.ShutdownDelay, "shutdown-delay", 5*time.Second, "on SIGTERM, keep serving this long with /readyz failing, so the Service drops the pod before its port closes [ACCEL_DRA_WEBHOOK_SHUTDOWN_DELAY]")
	f.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", 10*time.Second, "after --shutdown-delay, how long reviews in flight may take to finish [ACCEL_DRA_WEBHOOK_SHUTDOWN_TIMEOUT]")
	// Kubernetes' logging flags (--logging-format text or json, -v,
	// --vmodule, ...); logs go to stderr.
	logging = logflags.Add(f, "ACCEL_DRA_WEBHOOK_LOGGING_FORMAT")
	f.Lookup("v").Usage = "log verbosity: 0 start, stop and certificate reloads; 2 every denial; 4 every review"
	return cmd
}

// driversHelp lists reg's drivers, each with the config kind it takes.
func driversHelp(reg vendors.Registry) string {
	var out []string
	for _, v := range reg.All() {
		n := v.Names()
		kind := n.ConfigKind
		if kind == vendors.ConfigKindNone {
			kind = "no config"
		}
		out = append(out, n.Driver+" ("+kind+")")
	}
	return strings.Join(out, ", ")
}
