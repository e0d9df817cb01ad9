# accel-dra build, test and demo targets. Everything runs from Go modules;
# no binaries are downloaded but the Debian 12 packages of the image's base
# layer (apt-get, make image and make test, cached in _output/image).
GO ?= go
BIN := bin

# helm, built from the separate tools module hack/tools (pinned in its
# go.mod, cached by the go command after the first build).
HELM := $(GO) -C hack/tools run helm.sh/helm/v4/cmd/helm
CHART := $(CURDIR)/deployments/helm/accel-dra

# The image is what the chart deploys by default: its image.repository
# (values.yaml) and appVersion (Chart.yaml) as the tag.
VERSION ?= $(shell sed -n 's/^appVersion: "\(.*\)"/\1/p' deployments/helm/accel-dra/Chart.yaml)
IMAGE_REPOSITORY ?= $(shell sed -n '/^image:/,/^[^ #]/s/^  repository: *//p' deployments/helm/accel-dra/values.yaml)
IMAGE ?= $(IMAGE_REPOSITORY):$(VERSION)
IMAGE_PLATFORMS ?= linux/amd64,linux/arm64
# The image's binaries, in /usr/bin; the first is its entrypoint.
IMAGE_BINARIES := accel-dra-kubeletplugin accel-dra-webhook accel-dra
IMAGE_OUT := $(CURDIR)/_output/image
IMAGE_ARCHIVE ?= $(IMAGE_OUT)/accel-dra-$(VERSION).tar
# The image's creation time (and every file's): the last commit's, so that
# a build is reproducible.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
# The image builder, from its own module hack/image (go-containerregistry).
IMAGE_TOOL := $(GO) -C hack/image run .
CONTAINER_TOOL ?= docker
comma := ,
space := $(subst ,, )

.PHONY: all build static test testdeps test-e2e bench lint chart demo demo-cluster demo-cluster-down image image-push image-docker clean

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
	$(GO) vet -tags failpoint ./pkg/failpoint/ ./pkg/driver/ ./test/plugin/
	$(GO) -C hack/image vet ./...
	$(HELM) lint --strict $(CHART)

# Renders the chart with its defaults and in simulation; test/chart checks
# the renderings in detail.
chart:
	$(HELM) template accel-dra $(CHART) --namespace accel-dra >/dev/null
	$(HELM) template accel-dra $(CHART) --namespace accel-dra --set simulation.profile=mixed-910b-mlu370 --set simulation.fakeDevices=true >/dev/null

# hack/image's tests build the image from fixtures, push it to an
# in-process registry, and run a C++ program on the real Debian packages'
# C runtime (downloaded once into _output/image, as make image does).
# Failpoints exist only with the build tag failpoint: the crash tests
# build their node agent with it themselves; pkg/failpoint's own tests of
# the armed points need it on the command line.
test: lint chart testdeps
	$(GO) test -count=1 ./...
	$(GO) test -count=1 -tags failpoint ./pkg/failpoint/
	$(GO) -C hack/image test -count=1 ./...

# What the tests need besides Go and gcc, from Debian's apt where missing
# (as root, like the tests): g++ builds hack/image's C++ test program.
testdeps:
	@command -v g++ >/dev/null || { [ "$$(id -u)" = 0 ] && echo "installing g++ (apt)" && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++ >/dev/null; } || { echo "make test needs g++: apt-get install g++"; exit 1; }

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
# Deployment (accel-dra-webhook) both run, for linux/amd64 and linux/arm64,
# built without a container engine (docs/image.md): static binaries in
# bin/linux_<arch>/, a base layer of Debian 12 packages (downloaded once
# into _output/image/debs; REFRESH_DEBS=1 downloads their latest versions),
# written as the OCI layout _output/image/oci and the archive
# $(IMAGE_ARCHIVE) for `ctr -n k8s.io images import` or `docker load`.
image:
	@set -e; for p in $(subst $(comma),$(space),$(IMAGE_PLATFORMS)); do \
	  echo "go build $$p: $(IMAGE_BINARIES)"; \
	  CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build -trimpath -ldflags '-s -w' -o $(BIN)/$${p%/*}_$${p#*/}/ $(addprefix ./cmd/,$(IMAGE_BINARIES)); \
	done
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(IMAGE_TOOL) build --name $(IMAGE) --version $(VERSION) \
	  --platforms $(IMAGE_PLATFORMS) --bin-dir $(CURDIR)/$(BIN) --binaries $(subst $(space),$(comma),$(IMAGE_BINARIES)) \
	  --entrypoint /usr/bin/$(firstword $(IMAGE_BINARIES)) --cache $(IMAGE_OUT) --layout $(IMAGE_OUT)/oci \
	  --archive $(IMAGE_ARCHIVE) $(if $(REFRESH_DEBS),--refresh-debs)

# Pushes the image (the index and both platforms' images) to
# $(REGISTRY)/accel-dra:$(VERSION), e.g. REGISTRY=registry.example.com:5000/accel-dra,
# with docker's credentials (docker login); INSECURE=1 for a plain-HTTP
# registry that is not on localhost. Install the chart with
# --set image.repository=$(REGISTRY)/accel-dra then.
ifneq ($(filter image-push,$(MAKECMDGOALS)),)
ifeq ($(REGISTRY),)
$(error make image-push REGISTRY=<registry>[/<path>] pushes <REGISTRY>/$(notdir $(IMAGE_REPOSITORY)):$(VERSION))
endif
endif
image-push: image
	$(IMAGE_TOOL) push --layout $(IMAGE_OUT)/oci --to $(REGISTRY)/$(notdir $(IMAGE_REPOSITORY)):$(VERSION) $(if $(INSECURE),--insecure)

# The same image with a container engine, from deployments/container/Dockerfile
# (base gcr.io/distroless/cc-debian12; docker, or CONTAINER_TOOL=podman).
image-docker:
	$(CONTAINER_TOOL) build -f deployments/container/Dockerfile --build-arg VERSION=$(VERSION) -t $(IMAGE) .

clean:
	rm -rf $(BIN)
