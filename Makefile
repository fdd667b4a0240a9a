# Everything a fresh machine needs is set up by these targets: the venv, the
# Python packages, the Kaitai compiler and the Java and Go Kaitai runtimes.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
# The compiled accelerator is built by the editable install: an edited crate is rebuilt by it.
NATIVE_SOURCES := $(wildcard python/native/Cargo.toml python/native/Cargo.lock python/native/src/*.rs)

.PHONY: all venv wheel test lint typecheck unit spark-cluster ksy go-impl jvm fixtures fixtures-check conformance crash-full bench demo clean

all: test

$(STAMP): pyproject.toml setup.cfg $(NATIVE_SOURCES)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[all,test]'
	rm -f $(VENV)/.installed-*
	touch $@

venv: $(STAMP)

# The installable wheel, one for CPython 3.11 and later (cp311-abi3), in dist/.
wheel: $(STAMP)
	$(PY) -m pip wheel --quiet --no-deps --wheel-dir dist .

PY_SOURCES := $(wildcard python spark_udfs tools conformance)

lint: $(STAMP)
	$(VENV)/bin/ruff check $(PY_SOURCES)
	$(VENV)/bin/ruff format --check $(PY_SOURCES)

typecheck: $(STAMP)
	$(VENV)/bin/mypy

# The Kaitai compiler (npm), the Java and Go runtimes, the generated parsers and harnesses.
ksy:
	bash tools/ksy/setup.sh
	node tools/ksy/compile.js
	bash tools/ksy/build_harnesses.sh

# The independent Go implementation: vet, build, its own tests (standard library only).
go-impl:
	bash conformance/implementations/go/build.sh
	cd conformance/implementations/go && go test ./...

# The JVM reader core and Spark data source (spark_udfs/jvm): build/jvm/openbinlog.jar, compiled against the
# installed pyspark's jars; `spark.jars` takes it.
jvm: $(STAMP)
	sh spark_udfs/jvm/build.sh

# hadoop-aws and the AWS SDK modules S3A needs, pinned by spark_udfs/jvm/s3/pom.xml: the JVM source's S3 tests
# put them on the classpath, as a user's `--packages` does.
build/jvm/s3/.fetched: spark_udfs/jvm/s3/pom.xml
	rm -rf build/jvm/s3
	mvn -B -q -Dstyle.color=never -f spark_udfs/jvm/s3/pom.xml dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=$(CURDIR)/build/jvm/s3
	touch $@

# Golden fixtures, the conformance manifest and the list of decisions it pins: generated, never edited by hand.
fixtures: $(STAMP)
	$(PY) tools/gen_fixtures.py
	$(PY) tools/gen_decisions.py

fixtures-check: $(STAMP)
	$(PY) tools/gen_fixtures.py --check
	$(PY) tools/gen_decisions.py --check

# The conformance suite against every registered implementation; reports in build/conformance/.
conformance: $(STAMP) ksy go-impl jvm
	bash conformance/implementations/kaitai/build.sh
	$(VENV)/bin/binlog conformance run --impl all --xfail conformance/xfail.txt --out build/conformance

# The long runs (several minutes): larger crash-injection workloads, and every decision mutant on every
# conformance case; `make test` runs the default workloads, and each mutant on the cases that pin it.
crash-full: $(STAMP)
	$(VENV)/bin/pytest -q python/tests/crash python/tests/conformance/test_decision_mutants.py --full

unit: $(STAMP) ksy go-impl jvm build/jvm/s3/.fetched
	$(VENV)/bin/pytest -q

# The Spark tests on a standalone cluster, a master and two workers on 127.0.0.1 from the installed pyspark:
# tools/spark_cluster.py starts it, runs the tests with OPENBINLOG_SPARK_MASTER set to its URL, and stops exactly
# the processes it started, whatever the tests do (about a minute and a half).
spark-cluster: $(STAMP) jvm
	$(PY) tools/spark_cluster.py run -- $(VENV)/bin/pytest -q python/tests/spark_cluster

test: lint typecheck fixtures-check conformance unit spark-cluster

# The performance bars of design brief section 10, as ratios against baselines run side by side
# (a few minutes; tools/bench/bench --full adds 1 GB and 2 GB logs).
bench: $(STAMP) jvm
	$(PY) tools/bench/bench.py

demo: $(STAMP)
	$(PY) tools/demo.py

clean:
	rm -rf build dist .pytest_cache .mypy_cache .ruff_cache .hypothesis
