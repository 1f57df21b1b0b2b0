# make demo: install what is missing, build, run a one-node cluster and use ephemeral resources.
# make test: install what is missing, build (plain and with ASan+UBSan), run every test;
#            the chaos run only in the plain pass, for CHAOS_SMOKE_SECONDS of faults
#            (sanitized daemons are several times slower, so its latency bounds would
#            measure the sanitizer).
#            The sanitized pass also leaves out Ekya's live run (two minutes under ASan,
#            its failover bound then measures the sanitizer): `cd build-asan && ctest -R
#            test_ekya_live` runs it; its library code is in the ASan pass's ekya tests.
#            To keep `make test` under 30 minutes on two cores it leaves out three more
#            whole-program runs whose code the sanitized pass reaches elsewhere: Cilantro
#            live (its library: the cilantro unit tests), `escher up` over ssh and the
#            MapReduce word count (the same daemons and SDK as every integration test);
#            all three run in the plain pass, and `ASAN_SKIP=test_chaos make test-asan`
#            runs them sanitized.
#            Then the multi-threaded suites under ThreadSanitizer (test-tsan, build-tsan).
# make fuzz [FUZZ_SECONDS=300]: build the libFuzzer targets (tests/fuzz, clang, in
#            build-fuzz) and run each for FUZZ_SECONDS; `make test` runs them for about a
#            minute in all (test-fuzz), after replaying every regression input.
# make chaos [CHAOS_SECONDS=300]: the chaos run alone (tests/integration/test_chaos.c,
#            docs/benchmarks.md).
# make install [PREFIX=/usr/local]: build, then install the programs and the SDK under PREFIX.
# make package: build, then the .deb (build/escher_<version>_<arch>.deb).
#               Both: docs/deploy.md, "Installing the SDK".
BUILD_DIR ?= build
ASAN_DIR ?= build-asan
TSAN_DIR ?= build-tsan
FUZZ_DIR ?= build-fuzz
FUZZ_SECONDS ?= 300
FUZZ_SMOKE_SECONDS ?= 60
# make test's share of the chaos run; `make chaos` is the full one.
CHAOS_SMOKE_SECONDS ?= 60
CHAOS_SECONDS ?= 300
ASAN_SKIP ?= test_chaos|test_ekya_live|test_cilantro_live|test_cluster_up|test_mapreduce
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local

.PHONY: all deps build build-asan build-tsan build-fuzz test test-plain test-asan test-tsan test-fuzz fuzz chaos demo bench install package clean

all: build

deps:
	@deploy/install-deps.sh

# With the Makefile generator, the nested makes would print two "Entering directory"
# lines per target; --no-print-directory keeps the output to the progress lines.
QUIET = $$([ -f $(1)/Makefile ] && echo -- --no-print-directory)

build: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD_DIR) -j$(JOBS) $(call QUIET,$(BUILD_DIR))

build-asan: deps
	@cmake -S . -B $(ASAN_DIR) -DCMAKE_BUILD_TYPE=Debug -DESCHER_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_DIR) -j$(JOBS) $(call QUIET,$(ASAN_DIR))

build-tsan: deps
	@cmake -S . -B $(TSAN_DIR) -DCMAKE_BUILD_TYPE=Debug -DESCHER_TSAN=ON >/dev/null
	@cmake --build $(TSAN_DIR) -j$(JOBS) --target threaded_tests $(call QUIET,$(TSAN_DIR))

# Only the fuzz targets and the library files they read (tests/fuzz/CMakeLists.txt).
build-fuzz: deps
	@cmake -S . -B $(FUZZ_DIR) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DESCHER_FUZZ=ON >/dev/null
	@cmake --build $(FUZZ_DIR) -j$(JOBS) $(call QUIET,$(FUZZ_DIR))

test-plain: build
	cd $(BUILD_DIR) && { ESCHER_CHAOS_SECONDS=$(CHAOS_SMOKE_SECONDS) ctest --output-on-failure || { $(CURDIR)/tests/failure_summary.sh .; exit 1; }; }

test-asan: build-asan
	cd $(ASAN_DIR) && { ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 ctest --output-on-failure -E '$(ASAN_SKIP)' || { $(CURDIR)/tests/failure_summary.sh .; exit 1; }; }

# The suites labelled "threads" (tests/CMakeLists.txt); any TSan report in any process
# they start fails the run (tests/tsan_run.sh).
test-tsan: build-tsan
	tests/tsan_run.sh $(TSAN_DIR)

# The smoke run: FUZZ_SMOKE_SECONDS shared among the targets (--split).
test-fuzz: build-fuzz
	tests/fuzz/run.sh $(FUZZ_DIR) $(FUZZ_SMOKE_SECONDS) --split

fuzz: build-fuzz
	tests/fuzz/run.sh $(FUZZ_DIR) $(FUZZ_SECONDS)

chaos: build
	cd $(BUILD_DIR) && ESCHER_CHAOS_SECONDS=$(CHAOS_SECONDS) ctest --output-on-failure -R test_chaos

test: test-plain test-asan test-tsan test-fuzz

demo: build
	@deploy/demo.sh $(BUILD_DIR)

bench: build
	$(BUILD_DIR)/bench/ephemeral

install: build
	cmake --install $(BUILD_DIR) --prefix $(PREFIX)

package: build
	cd $(BUILD_DIR) && cpack -G DEB

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR) $(TSAN_DIR) $(FUZZ_DIR)
