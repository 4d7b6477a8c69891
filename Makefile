# neuro-san-grpc: every task a developer or CI runs. `make help` lists them.
# Only Python 3.11+, make, git (and node/npm for buf) are needed: the Makefile builds
# the virtualenv and installs everything else itself.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TOOLS := .tools
BUF := $(TOOLS)/node_modules/.bin/buf
PROTO_SRC := $(wildcard protos/neuro_san/api/grpc/*.proto)
HOST ?= 127.0.0.1
# The playground's browser tests drive Debian's chromium (never a downloaded browser).
CHROMIUM := /usr/bin/chromium

.PHONY: help install run test test-fast browser oidc-provider protos proto-check lint buf-lint buf-breaking typecheck bench bench-smoke clean soak redis-server haproxy cluster mcp-conformance

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	@# mem0: the client of studio's mem0 memory backend, so that its test runs (it adds packages, changes no pin).
	$(PY) -m pip install -q -e '.[dev,mem0]'
	@# Bytecode for our own packages, as pip writes it for installed ones: with
	@# PYTHONDONTWRITEBYTECODE set, every start would otherwise compile ~170 modules (~0.4 s).
	$(PY) -m compileall -q -j 0 neuro_san gateway generated >/dev/null
	@touch $(STAMP)

install: $(STAMP) ## create .venv and install the package with its dev tools

run: $(STAMP) ## serve the bundled example networks: gRPC :30011, HTTP :8080
	$(VENV)/bin/neuro-san serve --host $(HOST)

protos: $(STAMP) ## regenerate generated/ from protos/
	$(PY) -m neuro_san.devtools.gen_protos --out generated

proto-check: $(STAMP) ## fail when generated/ is not what `make protos` would write
	$(PY) -m neuro_san.devtools.gen_protos --check generated

$(BUF):
	@mkdir -p $(TOOLS)
	cd $(TOOLS) && npm install --silent --no-audit --no-fund --prefix . @bufbuild/buf@1 >/dev/null

# The OAuth tests run a real authorization server: the certified oidc-provider, on node.
OIDC_PROVIDER := $(TOOLS)/node_modules/oidc-provider/package.json
$(OIDC_PROVIDER):
	@mkdir -p $(TOOLS)
	@if command -v npm >/dev/null; then cd $(TOOLS) && npm install --silent --no-audit --no-fund --prefix . oidc-provider@9 >/dev/null; \
	else echo "oidc-provider: npm is not installed, the OAuth tests will be skipped"; fi

oidc-provider: $(OIDC_PROVIDER) ## the OpenID provider (npm) the OAuth tests start on loopback

# The official MCP conformance suite, run against our /mcp by the tests. 0.1.13 is the newest
# release that runs on Node 20 (later ones need Node 22's fs.globSync).
MCP_CONFORMANCE := $(TOOLS)/node_modules/@modelcontextprotocol/conformance/package.json
$(MCP_CONFORMANCE):
	@mkdir -p $(TOOLS)
	@if command -v npm >/dev/null; then cd $(TOOLS) && npm install --silent --no-audit --no-fund --prefix . @modelcontextprotocol/conformance@0.1.13 >/dev/null; \
	else echo "mcp-conformance: npm is not installed, the conformance test will be skipped"; fi

mcp-conformance: $(MCP_CONFORMANCE) ## the official MCP conformance suite (npm) the tests run against /mcp

buf-lint: $(BUF) ## buf lint (STANDARD, with the exceptions in buf.yaml)
	$(BUF) lint

# The API as first published; every later change must stay wire-compatible with it.
API_BASELINE := a62b07f3969b0553599a351067ec02096ef2be55

buf-breaking: $(BUF) ## buf breaking against the first published API and the main branch
	$(BUF) breaking --against '.git#ref=$(API_BASELINE)'
	@if git rev-parse --verify -q main >/dev/null; then $(BUF) breaking --against '.git#branch=main'; \
	else echo "buf-breaking: no main branch here; checked against the baseline only"; fi

lint: $(STAMP) buf-lint buf-breaking ## ruff, mypy and buf
	$(VENV)/bin/ruff check neuro_san gateway tests bench
	$(VENV)/bin/mypy

redis-server: ## Debian's redis-server for the shared-state tests, installed (as root, non-interactively) if missing
	@command -v redis-server >/dev/null || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q redis-server; }

haproxy: ## Debian's haproxy for the scale-out tests (the load balancer), installed (as root) if missing
	@command -v haproxy >/dev/null || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q haproxy; }

N ?= 3
cluster: $(STAMP) redis-server haproxy ## N replicas (default 3) behind haproxy, round-robin, sharing one redis-server
	$(PY) -m tests.support.cluster --replicas $(N)

# As root (CI, the dev machines) a missing chromium is installed; anyone else is told how.
$(CHROMIUM):
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing Debian's chromium for the playground's browser tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "browser tests will be skipped: install Debian's chromium (apt-get install chromium)" >&2; fi

browser: $(CHROMIUM) ## install Debian's chromium for the browser tests (as root)

test: $(STAMP) browser redis-server haproxy oidc-provider mcp-conformance proto-check lint ## install, check generated code and lint, then run the whole suite
	$(PY) -m pytest -rs

# No server process and no system service: a test that starts one is marked slow, and
# tests/support/fast_tier.py fails any unmarked test that does.
test-fast: $(STAMP) ## between edits: the in-process tests (not marked slow; under 90 s, no lint), stops at the first failure
	$(PY) -m pytest -x -m "not slow"

# The benchmark measures the recommended production install: the `fast` extra (uvloop).
FAST_STAMP := $(VENV)/.installed-fast
$(FAST_STAMP): $(STAMP)
	$(PY) -m pip install -q -e '.[dev,fast]'
	@touch $(FAST_STAMP)

bench: $(FAST_STAMP) ## the benchmark (uvloop): S1-S4 load, S5/S7 bursts, S6 floors, S8 workers, S9 tokens; many minutes (`python -m bench.run --help`)
	$(PY) -m bench.run

bench-smoke: $(STAMP) ## a quick run of the benchmark, to keep it from rotting (asserts nothing)
	$(PY) -m bench.run --smoke

clean: ## remove the virtualenv and caches
	rm -rf $(VENV) $(TOOLS) .pytest_cache .mypy_cache .ruff_cache

soak: $(STAMP) ## 10 minutes of mixed load on a real server: flat RSS, no errors (not in CI)
	$(PY) -m tests.soak
