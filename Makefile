# specd — the README's interface. `make demo` and `make test` work on a fresh Debian 12.
#   make deps    install the Debian packages the build needs (skipped when present)
#   make build   configure and build into build/ (CLI: build/bin/specd)
#   make test    deps + build + every test (ctest)
#   make demo    deps + build + a constructed q4_K_M pair whose planted map spells a text,
#                speculative vs plain (its models kept in build/demo/text), then the main job
#                on the shipped default models, where speculation does not pay
#   make models  retrain the shipped models (train/, about 2 hours on 2 cores)
#   make install PREFIX=DIR      build, then install bin/specd, lib/specd/plugins, the SDK and
#                                share/specd (configs, models) under DIR (default /usr/local)
#   make install-sdk PREFIX=DIR  the SDK alone (headers, CMake package): no core build
#   make package                 build, then the Debian packages in build/package/: specd_*.deb
#                                (sudo apt install ./build/package/specd_*.deb) and one
#                                specd-backend-<gpu>_*.deb per GPU backend built
#   make test-asan, make fuzz FUZZ_SECONDS=N   sanitizer and fuzzing runs (Makefile.hardening)
#   make bench-serve             the serving benchmark (bench/serve/serve_bench.py) into
#                                bench-serve-out/: report.json, report.md, serve.svg
SHELL := /bin/bash
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
DEMO_CONFIG ?= configs/default.toml
DEMO_PROMPT ?= def fibonacci(n):
PREFIX ?= /usr/local

# Debian packages: compiler and tools, Boost.DLL, oneDNN (Debian builds it with the OpenCL
# GPU runtime, so its CMake package requires the OpenCL loader and headers), toml++,
# doctest; PyTorch for the golden tests and training; HAProxy for the replica test; the HIP
# compiler so the HIP backend builds everywhere.
DEPS_BUILD := build-essential cmake pkg-config libboost-dev libboost-filesystem-dev \
              libdnnl-dev ocl-icd-opencl-dev opencl-c-headers libtomlplusplus-dev doctest-dev \
              ccache libcpp-httplib-dev nlohmann-json3-dev libzmq3-dev cppzmq-dev \
              libmsgpack-cxx-dev
DEPS_TEST  := python3 python3-numpy python3-torch libopenblas0-pthread python3-regex \
              python3.11-doc libpython3.11-stdlib valgrind haproxy python3-zmq \
              python3-msgpack python3-yaml
DEPS_GPU   := hipcc libamdhip64-dev

.PHONY: all deps deps-build build test demo clean format models models-smoke install install-sdk build-release \
        package bench-serve

all: build

deps:
	@./scripts/install-deps.sh $(DEPS_BUILD) $(DEPS_TEST) $(DEPS_GPU)

deps-build:
	@./scripts/install-deps.sh $(DEPS_BUILD)

build:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DSPECD_BUILD_TESTS=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

# What install and package ship, without compiling a single test suite.
build-release:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DSPECD_BUILD_TESTS=OFF $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

test: deps build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

demo: deps build
	./scripts/demo.sh $(BUILD)/bin/specd $(DEMO_CONFIG) "$(DEMO_PROMPT)" $(BUILD)/demo

# BENCH_SERVE_ARGS: e.g. --concurrency 1,4,16 --prompts 8 --max-tokens 64 (the defaults);
# --repeats 3 (each cell three times, modes interleaved) unless given here.
BENCH_SERVE_ARGS ?=
bench-serve: build
	python3 bench/serve/serve_bench.py --specd $(BUILD)/bin/specd --out bench-serve-out --repeats 3 \
	  $(BENCH_SERVE_ARGS)

install: build-release
	cmake --install $(BUILD) --prefix "$(PREFIX)"

# The SDK configured on its own (sdk/CMakeLists.txt): needs neither the core's dependencies
# nor a compiler.
install-sdk:
	cmake -S sdk -B $(BUILD)-sdk
	cmake --install $(BUILD)-sdk --prefix "$(PREFIX)"

package: deps-build build-release
	cd $(BUILD) && cpack -G DEB
	@ls $(BUILD)/package/*.deb

format:
	git ls-files '*.cpp' '*.hpp' '*.h' '*.cu' '*.cuh' | xargs clang-format -i

clean:
	rm -rf $(BUILD)

-include Makefile.models
-include Makefile.hardening
