# accel-dra build, test and demo targets. Everything runs from Go modules;
# no binaries are downloaded.
GO ?= go
BIN := bin

# helm, built from the separate tools module hack/tools (pinned in its
# go.mod, cached by the go command after the first build).
HELM := $(GO) -C hack/tools run helm.sh/helm/v4/cmd/helm
CHART := $(CURDIR)/deployments/helm/accel-dra

# The image defaults to the chart's appVersion, the tag the chart deploys.
VERSION ?= $(shell sed -n 's/^appVersion: "\(.*\)"/\1/p' deployments/helm/accel-dra/Chart.yaml)
IMAGE ?= ghcr.io/accel-dra/accel-dra:$(VERSION)
CONTAINER_TOOL ?= docker

.PHONY: all build static test test-e2e bench lint chart demo demo-cluster demo-cluster-down image clean

all: build

# The three binaries: the CLI accel-dra, the node agent
# accel-dra-kubeletplugin and the admission webhook accel-dra-webhook.
build:
	$(GO) build -o $(BIN)/ ./cmd/accel-dra ./cmd/accel-dra-kubeletplugin ./cmd/accel-dra-webhook

# The image's binaries, built as deployments/container/Dockerfile builds them.
static:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(BIN)/ ./cmd/accel-dra-kubeletplugin ./cmd/accel-dra-webhook ./cmd/accel-dra

lint:
	@out=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(HELM) lint --strict $(CHART)

# Renders the chart with its defaults and in simulation; test/chart checks
# the renderings in detail.
chart:
	$(HELM) template accel-dra $(CHART) --namespace accel-dra >/dev/null
	$(HELM) template accel-dra $(CHART) --namespace accel-dra --set simulation.profile=mixed-910b-mlu370 --set simulation.fakeDevices=true >/dev/null

test: lint chart
	$(GO) test -count=1 ./...

# Benchmarks (docs/benchmarks.md): prepare latency next to the floor of
# its file writes, slice publication and allocation over 1000 nodes, the
# node agent's memory. About 3 minutes on the 2-core machine; not part of
# make test, which runs each benchmark's setup once, small. Needs root
# (fake device nodes), like make test. An allocation iteration takes
# about a second, so those run a fixed 5 iterations each, not one.
BENCH_PKGS := ./test/plugin/ ./pkg/resourceslices/ ./pkg/simulate/
bench:
	$(GO) test -count=1 -run '^$$' -bench . -benchmem -p 1 -timeout 60m $(BENCH_PKGS)
	$(GO) test -count=1 -run '^$$' -bench . -benchmem -benchtime 5x -timeout 60m ./test/bench/

# Tier 4: a real local cluster (etcd, kube-apiserver, scheduler,
# controller-manager, a real kubelet with containerd, kwok nodes), built
# from the Go module proxy into _output/e2e-cache on first use. Needs root.
test-e2e:
	bash hack/e2e/run.sh

# The same cluster with the demo applied, left running for you to try;
# prints the kubeconfig path. make demo-cluster-down stops it.
demo-cluster:
	bash hack/e2e/demo-cluster.sh up

demo-cluster-down:
	bash hack/e2e/demo-cluster.sh down

# The embedded default: a simulated node, no cluster needed.
demo: build
	$(BIN)/accel-dra simulate --cluster demo/cluster.yaml -f deployments/helm/accel-dra/deviceclasses -f demo/workloads

# The image the chart's DaemonSet (accel-dra-kubeletplugin) and webhook
# Deployment (accel-dra-webhook) both run. Needs a container engine (docker,
# or CONTAINER_TOOL=podman).
image:
	$(CONTAINER_TOOL) build -f deployments/container/Dockerfile --build-arg VERSION=$(VERSION) -t $(IMAGE) .

clean:
	rm -rf $(BIN)
