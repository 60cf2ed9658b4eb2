# The user's entry points; the build itself is CMake (CMakePresets.json).
#   make run    install what is missing, configure, build, run the main job
#   make test   install, build, run every ctest suite but the benchmarks (and, where nvcc
#               is, build the trainers for CUDA beside them, at low priority)
#   make gpu    the CUDA build of the trainers and benchmarks (preset gpu-kokkos)
#   make bench  build and run the benchmarks
#   make tsan   ThreadSanitizer: unit tests, progress thread and watchdog
#   make fuzz   fuzz the checkpoint reader, safetensors parser, configuration parser and
#               tokenizer (FUZZ_SECONDS each)
#   make docs   the API reference from the public headers (Doxygen): build/docs/api/html and
#               man3 pages, which make install installs with the tools' man1 pages
#   make install PREFIX=P   libraries, headers, tools, man pages and the manual under P
# The manual is README.md and docs/ (docs/configuration.md is generated:
# scripts/gen-config-doc build/apps/zrt-info -o docs/configuration.md).
SHELL := /bin/bash
BUILD := build
SANITIZE_BUILD := build-sanitize

.PHONY: all deps configure build gpu gpu-trainers run test bench sanitize tsan fuzz docs format format-check install clean

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

# The trainers compiled for CUDA (Kokkos' CUDA backend, sm_90) wherever nvcc is; the
# cuda_trainers test runs them.
gpu-trainers: build
	./scripts/build-gpu-trainers

gpu: build
	./scripts/build-gpu-trainers --all

# The trainers' CUDA build runs beside the tests, at the lowest priority: it takes the time
# the tests leave (their waits for timeouts, Slurm and MPI starts), not the tests' own. With
# the kernel's autogroups (one per session), nice alone ranks processes only within their
# session: the build gets a session of its own and that session's group gets nice 19. The
# test of the CUDA trainers runs once both are done. A failed build fails `make test`.
test: build
	@setsid --wait sh -c 'echo 19 > /proc/self/autogroup 2>/dev/null; exec nice -n 19 ./scripts/build-gpu-trainers' \
	  > $(BUILD)/gpu-trainers.log 2>&1 & gpu=$$!; \
	ctest --preset default -E '^cuda_trainers$$'; rc=$$?; \
	if ! wait $$gpu; then cat $(BUILD)/gpu-trainers.log; echo "make test: the trainers' CUDA build failed"; exit 1; fi; \
	tail -n 1 $(BUILD)/gpu-trainers.log; \
	ctest --preset default -R '^cuda_trainers$$' && exit $$rc

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

# The API reference (target docs of the CMake build; doxygen comes with install-deps). A
# build configured before install-deps brought doxygen looks for it again.
docs: configure
	@if grep -q '^ZRT_DOXYGEN:FILEPATH=.*NOTFOUND' $(BUILD)/CMakeCache.txt; then cmake $(BUILD) > /dev/null; fi
	cmake --build --preset default --target docs

install: build docs
	cmake --install $(BUILD) --prefix $(or $(PREFIX),/usr/local)

clean:
	rm -rf $(BUILD) $(SANITIZE_BUILD) build-debug build-fuzz build-tsan build-gpu build-gpu-kokkos
