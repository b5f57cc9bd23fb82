# voxpipe — `make demo` and `make test` set everything up on a fresh Debian machine.
SWIFT ?= swift
DEBUG_BIN := .build/debug/voxpipe
RELEASE_BIN := .build/release/voxpipe
DEMO_OUT ?= out/demo

.PHONY: setup build build-debug test test-fast cluster-test interop demo bench schema readme fuzz format lint clean

setup:
	@scripts/setup.sh

build: setup
	$(SWIFT) build -c release

build-debug: setup
	$(SWIFT) build

# The unit and command-line tests, the Kubernetes example checked against the API schema, the
# interop run against real third-party OpenAI-compatible servers when they are installed, then
# the Slurm cluster test when it can run here (root; each says why when it skips). The Swift tests
# run under a watchdog that names the tests of a run that hangs (scripts/swift-test.sh).
test: setup
	@SWIFT=$(SWIFT) scripts/swift-test.sh
	@scripts/validate-deploy.sh
	@VOXPIPE=$(DEBUG_BIN) scripts/interop.sh --if-possible
	@scripts/cluster-test.sh --if-possible

# The fast tier (docs/testing.md): the tests that load no model, start no child process and wait on
# no real clock (planner, runner, ledger, every stage through the harness with fakes, serve's
# handlers); the others are skipped, each saying why. No `make setup` (no apt-get, downloads or
# models): only the libraries voxpipe links, which setup installed once. `swift test` builds first.
test-fast:
	@pkg-config --exists whisper sherpa-onnx sndfile soxr samplerate espeak-ng pocketsphinx libcurl || \
		{ echo "test-fast: the libraries voxpipe links are not all installed: run make setup once" >&2; exit 1; }
	@VOXPIPE_TEST_TIER=fast SWIFT=$(SWIFT) scripts/swift-test.sh

# voxpipe's openai transcribe provider against faster-whisper-server and whisper.cpp's server on
# 127.0.0.1 (installed by make setup); VOXPIPE_INTEROP_UPDATE=1 re-records Tests/Fixtures/interop.
interop: build-debug
	@VOXPIPE=$(DEBUG_BIN) scripts/interop.sh

# A one-node Slurm cluster (munge, slurmctld, slurmd, all in a temporary folder) runs
# Pipelines/deploy/slurm-array.sh over 200 files with faults; about 1-2 minutes. See
# docs/scale-out.md.
cluster-test: build-debug
	@scripts/cluster-test.sh

demo: build-debug
	@rm -rf $(DEMO_OUT)
	$(DEBUG_BIN) validate Pipelines/lesson-tutor.json
	$(DEBUG_BIN) run Pipelines/lesson-tutor.json $(filter-out %.md,$(wildcard Samples/*.*)) --output $(DEMO_OUT)
	$(DEBUG_BIN) run Pipelines/field-service-agents.json Samples/field-service --output $(DEMO_OUT)/field-service
	$(DEBUG_BIN) run Pipelines/lesson-speakers.json Samples/speakers --output $(DEMO_OUT)/speakers
	@echo
	@echo "demo outputs (one folder per sample: subtitles, spoken replies at 48 kHz, replies.json):"
	@find $(DEMO_OUT) -type f ! -name '.*' | sort | sed 's/^/  /'
	@echo
	@echo "$(DEMO_OUT)/speech-de-44k-stereo/replies.json:"
	@cat $(DEMO_OUT)/speech-de-44k-stereo/replies.json
	@echo
	@echo "$(DEMO_OUT)/field-service/book-job/records/job.json (a field-service session's saved job):"
	@cat $(DEMO_OUT)/field-service/book-job/records/job.json
	@echo
	@echo "$(DEMO_OUT)/speakers/lesson-two-voices/subs.vtt (a lesson of two voices, who said what):"
	@cat $(DEMO_OUT)/speakers/lesson-two-voices/subs.vtt

bench: build
	bench/bench.sh

# Regenerate Pipelines/schema.json after changing a stage's options (a test checks it is current).
schema: build-debug
	$(DEBUG_BIN) schema > Pipelines/schema.json

# Regenerate the tables of kinds, options and providers in docs/reference.md (a test checks they
# are current).
readme: build-debug
	$(DEBUG_BIN) stages --update-readme docs/reference.md

# Fuzz where outside bytes come in (uploads, sidecars, specs, rules, BagIt manifests, message-chunk
# indexes, HTTP answers, ledger manifests): libFuzzer + AddressSanitizer, 12000 inputs a target,
# about 10 minutes on 2 cores. Not part of `make test`. FUZZ_RUNS=N for more; see scripts/fuzz.sh.
fuzz: setup
	@scripts/fuzz.sh

# Formatting: .swift-format (120 columns, 4 spaces). `make format` rewrites, `make lint` checks
# (swift-format's rules, then no line over 120 columns).
SWIFT_SOURCES := Sources Tests Fuzz/Sources Package.swift Fuzz/Package.swift
format:
	$(SWIFT) format -i -r -p $(SWIFT_SOURCES)

lint:
	$(SWIFT) format lint -r -p --strict $(SWIFT_SOURCES)
	@scripts/line-length.py

clean:
	rm -rf .build .build-fuzz out bench/work
