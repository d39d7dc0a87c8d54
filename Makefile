# kevin — the two quick-start commands (`make demo`, `make test`) and their building blocks.
# Everything is incremental: a second run installs nothing and rebuilds only what changed.
BUILD      ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=
# Set SKIP_DEPS=1 where packages cannot be installed (e.g. the GPU machine).
SKIP_DEPS  ?= 0

.PHONY: all deps deps-demo configure build build-demo demo test test-unit asan tsan thread-safety format clean

all: build

# The packages present, as install-deps last saw them: a change configures the build again, so
# `make build` after `make demo` finds the trainer's, server's and queue's packages.
STAMP := $(BUILD)/packages.list

deps:
ifeq ($(SKIP_DEPS),0)
	@scripts/install-deps --stamp $(STAMP)
endif

deps-demo:
ifeq ($(SKIP_DEPS),0)
	@scripts/install-deps --demo --stamp $(STAMP)
endif

$(STAMP):
	@mkdir -p $(BUILD) && touch $@

$(BUILD)/CMakeCache.txt: $(STAMP)
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS)

configure: deps
	@$(MAKE) --no-print-directory $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# What the demo runs and nothing else: the kevin binary with its runner and sandbox (and the
# trainer where libtorch is installed); the tests build under `make test`.
build-demo:
	@$(MAKE) --no-print-directory $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target kevin

demo:
	@echo "== kevin demo (1/3): installing packages (the demo's part of scripts/install-deps) =="
	@$(MAKE) --no-print-directory deps-demo
	@echo "== kevin demo (2/3): building kevin (the binary, its runner and sandbox; tests build under make test) =="
	@$(MAKE) --no-print-directory build-demo
	@echo "== kevin demo (3/3): judging the examples =="
	@scripts/demo $(BUILD)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

test-unit: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -L unit

# Unit tests under AddressSanitizer + UndefinedBehaviorSanitizer, in their own build tree.
asan: deps
	cmake -S . -B $(BUILD)-asan -DCMAKE_BUILD_TYPE=Debug -DKEVIN_SANITIZE=ON -DKEVIN_TORCH=OFF $(CMAKE_ARGS)
	cmake --build $(BUILD)-asan -j $(JOBS)
	ctest --test-dir $(BUILD)-asan --output-on-failure -j $(JOBS) -L unit

# The threaded modules' unit tests (label tsan, cmake/KevinBuild.cmake) under ThreadSanitizer;
# only their binaries are built.
TSAN_TESTS ?= core_test env_test rollout_test queue_test server_test policy_test judge_fake_runner_test
tsan: deps
	cmake -S . -B $(BUILD)-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKEVIN_SANITIZE=thread -DKEVIN_TORCH=OFF $(CMAKE_ARGS)
	cmake --build $(BUILD)-tsan -j $(JOBS) --target $(TSAN_TESTS)
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ctest --test-dir $(BUILD)-tsan --output-on-failure -j $(JOBS) -L tsan

# clang's thread-safety analysis of every unit that uses a mutex (core/mutex.h), as errors.
thread-safety: configure
	scripts/check-thread-safety $(BUILD)

format:
	scripts/check-format-files | xargs clang-format -i
	scripts/check-python-files | grep -v '^tasks/' | xargs black --quiet --line-length 100

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-tsan
