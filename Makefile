# The user's entry points; the build itself is CMake (CMakePresets.json).
#   make run    install what is missing, configure, build, run the main job
#   make test   install, build, run every ctest suite but the benchmarks
#   make bench  build and run the benchmarks
#   make tsan   ThreadSanitizer: unit tests, progress thread and watchdog
#   make fuzz   fuzz the checkpoint reader, safetensors parser, configuration parser and
#               tokenizer (FUZZ_SECONDS each)
SHELL := /bin/bash
BUILD := build
SANITIZE_BUILD := build-sanitize

.PHONY: all deps configure build run test bench sanitize tsan fuzz format format-check install clean

all: build

deps:
	@./scripts/install-deps

# Configure once; afterwards CMake re-runs itself when a CMakeLists.txt changes.
$(BUILD)/build.ninja:
	cmake --preset default

configure: deps $(BUILD)/build.ninja

build: configure
	cmake --build --preset default

run: build
	./scripts/run-main $(BUILD)

test: build
	ctest --preset default

bench: build
	./scripts/run-bench $(BUILD)

sanitize: deps
	test -f $(SANITIZE_BUILD)/build.ninja || cmake --preset sanitize
	cmake --build --preset sanitize
	ctest --preset sanitize

# ThreadSanitizer: the unit tests, and the progress thread and watchdog at np 2 and 4.
tsan: deps
	test -f build-tsan/build.ninja || cmake --preset tsan
	cmake --build --preset tsan
	ctest --preset tsan

# Coverage-guided fuzzing of the checkpoint reader and safetensors parser (clang libFuzzer).
FUZZ_SECONDS ?= 60
fuzz:
	@./scripts/install-deps --fuzz
	test -f build-fuzz/build.ninja || cmake --preset fuzz
	cmake --build --preset fuzz
	./scripts/run-fuzz build-fuzz $(FUZZ_SECONDS)

format:
	git ls-files '*.c' '*.cpp' '*.h' '*.hpp' | xargs clang-format -i

format-check:
	git ls-files '*.c' '*.cpp' '*.h' '*.hpp' | xargs clang-format --dry-run --Werror

install: build
	cmake --install $(BUILD) --prefix $(or $(PREFIX),/usr/local)

clean:
	rm -rf $(BUILD) $(SANITIZE_BUILD) build-debug build-fuzz build-tsan
