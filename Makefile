# voxpipe — `make demo` and `make test` set everything up on a fresh Debian machine.
SWIFT ?= swift
DEBUG_BIN := .build/debug/voxpipe
RELEASE_BIN := .build/release/voxpipe
DEMO_OUT ?= out/demo

.PHONY: setup build build-debug test demo bench schema clean

setup:
	@scripts/setup.sh

build: setup
	$(SWIFT) build -c release

build-debug: setup
	$(SWIFT) build

test: setup
	$(SWIFT) test --disable-xctest

demo: build-debug
	@rm -rf $(DEMO_OUT)
	$(DEBUG_BIN) validate Pipelines/resample-16k.json
	$(DEBUG_BIN) run Pipelines/resample-16k.json Samples --output $(DEMO_OUT)
	@echo
	@echo "demo outputs (16 kHz mono WAV, one folder per sample):"
	@find $(DEMO_OUT) -type f -name '*.wav' | sort | sed 's/^/  /'

bench: build
	bench/bench.sh

# Regenerate Pipelines/schema.json after changing a stage's options (a test checks it is current).
schema: build-debug
	$(DEBUG_BIN) schema > Pipelines/schema.json

clean:
	rm -rf .build out bench/work
