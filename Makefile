# kevin — the two quick-start commands (`make demo`, `make test`) and their building blocks.
# Everything is incremental: a second run installs nothing and rebuilds only what changed.
BUILD      ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=
# Set SKIP_DEPS=1 where packages cannot be installed (e.g. the GPU machine).
SKIP_DEPS  ?= 0

.PHONY: all deps configure build demo test test-unit asan format clean

all: build

deps:
ifeq ($(SKIP_DEPS),0)
	@scripts/install-deps
endif

$(BUILD)/CMakeCache.txt:
	@$(MAKE) --no-print-directory deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS)

configure: deps $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

demo: build
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

format:
	find src tests bench -name '*.h' -o -name '*.cpp' -o -name '*.cu' | grep -v fixtures | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(BUILD)-asan
