# ragloop — every target installs what it needs first (.tools/uv, .venv, the chat model).
SHELL := /bin/bash
.DEFAULT_GOAL := help

UV_VERSION := 0.13.8
TOOLS := .tools
UV := $(TOOLS)/bin/uv
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.synced

# llama.cpp's server is compiled from source once (~7 min on 2 cores); uv caches the built wheel.
# Not for -march=native: on a CPU with AMX (Xeon Sapphire Rapids) that build's AMX matrix kernels
# crash the server on its first prompt (SIGSEGV in ggml_backend_amx_mul_mat, 2026-11-24). So the
# build targets AVX2 and adds the CPU's AVX-512 extensions by name, never AMX.
export LLAMA_CPP_BUILD_JOBS ?= $(shell nproc)
CPU_FLAGS := $(shell grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
cpu_has = $(if $(filter $(1),$(CPU_FLAGS)),$(2))
LLAMA_CPU_ARGS := -DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
	$(call cpu_has,avx512f,-DGGML_AVX512=ON) $(call cpu_has,avx512vbmi,-DGGML_AVX512_VBMI=ON) \
	$(call cpu_has,avx512_vnni,-DGGML_AVX512_VNNI=ON) $(call cpu_has,avx512_bf16,-DGGML_AVX512_BF16=ON)
export CMAKE_ARGS ?= -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF $(strip $(LLAMA_CPU_ARGS))
# Use this machine's Python; never download one.
export UV_PYTHON_DOWNLOADS := never

PYTEST_ARGS ?=

.PHONY: help install models run run-no-ingest test test-unit test-service test-integration test-observability test-browser \
        bench bench-retrieval bench-models protos check settings-docs deploy-files lint format clean \
        up down test-deploy bench-reliability bench-balancing bench-compare bench-quality bench-userqa bench-docsqa bench-stream bench-conversations bench-concurrency

help:  ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

$(UV):
	python3 -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

$(STAMP): $(UV) uv.lock pyproject.toml libs/*/pyproject.toml services/*/pyproject.toml
	$(UV) sync --frozen --all-packages
	@touch $@

install: $(STAMP)  ## create .venv with every package (uv, locked)

models: $(STAMP)  ## join and verify the local chat model into .models/
	$(PY) -m ragloop.local.cli install-models

# Replicas of stages and llama-servers: make run REPLICAS=grader=2,generator=2 MODEL_SERVERS=2
REPLICAS ?=
MODEL_SERVERS ?=
RUN_OPTIONS = $(if $(REPLICAS),--replicas $(REPLICAS)) $(if $(MODEL_SERVERS),--model-servers $(MODEL_SERVERS))

run: models  ## run all services on 127.0.0.1 and ingest docs/ as a sample corpus (REPLICAS=grader=2 MODEL_SERVERS=2)
	$(PY) -m ragloop.local.cli run $(RUN_OPTIONS)

run-no-ingest: models  ## run all services without ingesting anything
	$(PY) -m ragloop.local.cli run --no-ingest $(RUN_OPTIONS)

test: models  ## the whole test suite: unit, service and integration
	$(PY) -m pytest $(PYTEST_ARGS)

test-unit: $(STAMP)  ## unit tests only (no network, no model)
	$(PY) -m pytest tests/unit $(PYTEST_ARGS)

test-service: models  ## gRPC and REST service tests
	$(PY) -m pytest tests/service $(PYTEST_ARGS)

test-integration: models  ## the five real processes with real models
	$(PY) -m pytest tests/integration $(PYTEST_ARGS)

test-observability: models  ## metrics, dashboards and alert rules against a real Prometheus
	$(PY) -m pytest tests/observability $(PYTEST_ARGS)

test-browser: models  ## the web page in a real headless Chromium
	$(PY) -m pytest tests/browser $(PYTEST_ARGS)

test-deploy: $(STAMP)  ## compose file, Dockerfile and Kubernetes manifests, offline (installs Debian's docker-compose when missing)
	$(PY) -m pytest tests/deploy $(PYTEST_ARGS)

up:  ## the production topology on this host with Docker (deploy/docker-compose.yml); creates deploy/.env with new secrets the first time
	@command -v docker >/dev/null || { echo "make up needs Docker with the compose plugin (docs/deployment.md)"; exit 1; }
	deploy/init-env.sh
	cd deploy && docker compose up -d --build --wait
	@echo "ragloop: http://localhost:$$(sed -n 's/^PUBLISH_HTTP_PORT=//p' deploy/.env)/ (API key: RAGLOOP_API_KEYS in deploy/.env)"
	@echo "Grafana: http://localhost:$$(sed -n 's/^PUBLISH_GRAFANA_PORT=//p' deploy/.env)/ (admin, GRAFANA_ADMIN_PASSWORD in deploy/.env)"

down:  ## stop the compose stack (the data stays in its volumes)
	cd deploy && docker compose down

bench: bench-retrieval bench-models bench-reliability bench-balancing bench-compare bench-quality bench-userqa bench-docsqa bench-stream bench-conversations bench-concurrency  ## every benchmark; results in bench/results/ and docs/benchmarks.md

bench-retrieval: $(STAMP)  ## SciFact nDCG/recall per mode, ingest throughput, search latency (writes bench/results/)
	$(PY) -m bench.retrieval $(BENCH_ARGS)

bench-reliability: models  ## load (small model), memory over 10,000 retrievals, fault tests (writes bench/results/reliability.json)
	$(UV) sync --frozen --all-packages --group bench
	$(PY) -m ragloop.local.cli install-models --model qwen2.5-coder-0.5b-instruct
	$(PY) -m bench.reliability $(BENCH_ARGS)

BALANCING_ARGS ?=

bench-balancing: models  ## queries/s and p50/p95 with 1 vs 2 grader replicas in front of two llama-servers (writes bench/results/balancing.json)
	$(PY) -m bench.balancing $(BALANCING_ARGS)

bench-models: models  ## grader F1 (SciFact, 1.5B and 0.5B), grading cost, PubMedQA answers (writes bench/results/)
	$(UV) sync --frozen --all-packages --group bench
	$(PY) -m ragloop.local.cli install-models --model qwen2.5-coder-0.5b-instruct
	$(PY) -m bench.models $(BENCH_ARGS)

# Its own variable: `make bench` runs every benchmark, whose options differ.
COMPARE_ARGS ?=

bench-compare: models  ## ragloop vs a LangGraph corrective RAG: latency, tokens, evidence, throughput (writes bench/results/compare.json)
	$(UV) sync --frozen --all-packages --group bench
	$(PY) -m bench.compare $(COMPARE_ARGS)

bench-conversations: models  ## follow-up questions made standalone by the real rewriter: share keeping the referent (writes bench/results/conversations.json)
	$(PY) -m bench.conversations $(BENCH_ARGS)

QUALITY_ARGS ?=

bench-quality: models  ## answer accuracy: ragloop, single-shot, plain RAG, LangGraph baseline on SQuAD 2.0 and PubMedQA (writes bench/results/quality.json)
	$(UV) sync --frozen --all-packages --group bench
	$(PY) -m bench.quality $(QUALITY_ARGS)

USERQA_ARGS ?=

bench-userqa: models  ## user-shaped questions (shared/data/userqa) scored by `ragloop eval`: ragloop, single-shot, ungraded, stuffed (plain RAG), the reading ceiling (writes userqa_* into bench/results/quality.json)
	$(UV) sync --frozen --all-packages --group bench
	$(PY) -m bench.userqa $(USERQA_ARGS)

DOCSQA_ARGS ?=

bench-docsqa: models  ## a newcomer's 20 questions over ragloop's own docs/ (bench/data/docsqa.jsonl), asked of ragloop and scored by `ragloop eval` (writes docsqa_* into bench/results/quality.json)
	$(PY) -m bench.docsqa $(DOCSQA_ARGS)

STREAM_ARGS ?=

bench-stream: models  ## how soon the OpenAI stream shows motion: seconds to the first event, reasoning_content and content over docsqa's questions, by the `openai` SDK (writes first_event_s_* into bench/results/quality.json)
	$(PY) -m bench.stream_start $(STREAM_ARGS)

CONCURRENCY_ARGS ?=

bench-concurrency: models  ## answers per minute of ragloop and stuffed (plain RAG) on 10 userqa questions by llama-server slots (1,2,4) and concurrent clients (1,4), to choose make run's slots (writes model_slots and concurrent4_* into bench/results/quality.json)
	$(PY) -m bench.concurrency $(CONCURRENCY_ARGS)

protos: $(STAMP)  ## regenerate ragloop.v1 stubs from protos/
	$(PY) -m ragloop.core.protogen libs/core/src

check: lint  ## lint, format check, import contracts, committed stubs in sync with protos, deploy files in sync with the stage registry
	$(VENV)/bin/lint-imports --no-cache
	$(PY) -m pytest -q tests/unit/test_protos_in_sync.py
	$(PY) scripts/deploy_files.py --check

settings-docs: $(STAMP)  ## regenerate deploy/.env.example and docs/configuration.md's settings table
	$(PY) scripts/settings_docs.py

deploy-files: $(STAMP)  ## rewrite the stages' parts of deploy/ (compose, k8s, Prometheus) from the stage registry
	$(PY) scripts/deploy_files.py

lint: $(STAMP)  ## ruff
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(STAMP)  ## ruff format + autofix
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

clean:  ## remove run state (data, logs); keeps .venv and .models
	rm -rf data .run
