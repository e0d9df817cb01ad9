# accel-dra build, test and demo targets. Everything runs from Go modules;
# no binaries are downloaded.
GO ?= go
BIN := bin

.PHONY: all build test lint demo clean

all: build

build:
	$(GO) build -o $(BIN)/accel-dra ./cmd/accel-dra

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

test: lint
	$(GO) test ./...

# The embedded default: a simulated node, no cluster needed.
demo: build
	$(BIN)/accel-dra simulate --cluster demo/cluster.yaml -f deployments/deviceclasses -f demo/workloads

clean:
	rm -rf $(BIN)
