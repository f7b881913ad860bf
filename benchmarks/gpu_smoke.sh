#!/usr/bin/env bash
# First GPU check of the harness: one script, at most 8 minutes on one H100/H200.
#
#   bash benchmarks/gpu_smoke.sh                  # writes ./gpu_smoke_out/summary.json and logs
#   OUT=/tmp/smoke PYTHON=.venv/bin/python bash benchmarks/gpu_smoke.sh
#   bash benchmarks/gpu_smoke.sh --bundle .bundle   # a node without a package index (docs/GPU_NODES.md)
#
# --bundle DIR: a folder made by `harness bundle` (harness/engine/bundle/README.md). Its wheels are installed
# with `pip install --no-index --no-deps` into $OUT/site (step `bundle`), which goes first on
# PYTHONPATH over the node's own packages (its torch, transformers), its converted models into the
# harness cache, and nothing is fetched (GPU_SMOKE_INSTALL=0).
#
# Steps, in the order of their value (what has never run on a GPU first), each under its own time
# limit (`timeout`); a step that fails or runs out of time never stops the later ones:
#   setup        a Python with the harness (PYTHON, else .venv, else `make setup`), the embedded
#                tokenizer converted, and whether CUDA and vLLM are there
#   env          GPU, torch / CUDA, bf16 matmul rate, SDPA with a padding mask, package versions
#   gpu_step     benchmarks/gpu_step.py --shape paper --rollout hf --variants corver (random
#                Llama-3.2-3B, 2 steps at 256 tokens): generated tokens/s beside the decode bound, and
#                `100 steps ~ h:mm` projected to the protocol's 1,000-token limit
#   ppo_step     one RLFH PPO step (judge=reference, its LoRA critic) at the paper shape, 128 tokens
#   fspo_hhem    FSPO's HHEM (flan-t5-base shape, random weights) on CUDA in bf16 against fp32
#   assets       a small random Llama (head_dim 64, 32k vocabulary) on disk, the fixture index, a pool
#   vllm_run     harness run method=corver train.use_vllm=true eval.backend=vllm, 2 steps: colocated
#                engine, sleep mode, LoRA sync, then the evaluation engine in a fresh process
#   ppo_vllm     the PPO engine with a LoRA critic and vLLM rollouts (tests/ppo/toy_ppo.py)
#   vllm_eval    harness eval eval.backend=vllm adapter=<vllm_run's adapter>, a fresh process
#   hf_run       harness run method=corver with HF generation and HF evaluation on CUDA
#   critic_ckpt  the PPO critic's gradients with and without gradient checkpointing, on CUDA
# Steps that need CUDA say SKIP ("no CUDA") without it, those that need vLLM say SKIP ("vllm not
# installed") without it; on a CPU the harness commands of the skipped steps are still composed
# (`--cfg job`), so a wrong override shows there. Device memory: an nvidia-smi sampler in the
# background (every 0.5 s, all processes, vLLM's pool and the CUDA context included) gives each
# step's peak. Output under $OUT: summary.json (one entry per step: status PASS / FAIL / TIMEOUT /
# SKIP, seconds, limit, peak MiB, planned GB where the step prints a plan, note, log file), one log
# per step, nvidia_smi.csv. The output ends with each step's peak beside its plan, the `100 steps ~`
# line at 1,000 tokens and one line per method (CorVer, RLFH, FSPO).
# Limits, by the times measured on one H200 without vLLM (docs/GPU_CHECK.md has the arithmetic):
# setup 78 s, env 6, gpu_step ~90 (CorVer alone: init 4.5 + warm-up 48.7 + step 21.3 + the parent's
# index and imports), ppo_step ~65 (estimate), fspo_hhem ~20 (estimate), assets 16, hf_run 55,
# critic_ckpt 29: ~360 s expected of the 480 s budget, 120 s for compiling the decode step.
# GPU_SMOKE_BUDGET_S (default 480) bounds the whole run: a step never gets more than what is left.
set -u

BUNDLE=""
while [ $# -gt 0 ]; do
  case $1 in
    --bundle) BUNDLE=${2:-}; shift $(( $# > 1 ? 2 : 1 ));;
    --bundle=*) BUNDLE=${1#--bundle=}; shift;;
    *) echo "gpu_smoke.sh: unknown option '$1'; valid: --bundle DIR" >&2; exit 2;;
  esac
done
if [ -n "$BUNDLE" ] && [ ! -f "$BUNDLE/requirements.txt" ]; then
  echo "gpu_smoke.sh: --bundle '$BUNDLE' has no requirements.txt; make one with harness bundle --out DIR" >&2; exit 2
fi
[ -n "$BUNDLE" ] && BUNDLE=$(cd "$BUNDLE" && pwd) && export GPU_SMOKE_INSTALL=0

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-./gpu_smoke_out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BUDGET_S=${GPU_SMOKE_BUDGET_S:-480}
START=$(date +%s)
STEPS="$OUT/steps.tsv"
: > "$STEPS"
cd "$REPO" || exit 2
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
export PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}
SUMMARY_PY=$(command -v python3 || command -v python)

left() { echo $(( BUDGET_S - ($(date +%s) - START) )); }

write_summary() {
  "$SUMMARY_PY" - "$OUT" "$BUDGET_S" "$START" <<'EOF'
import csv, json, os, re, sys, time
out, budget, start = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
samples = []
try:
    with open(os.path.join(out, "nvidia_smi.csv")) as handle:
        for line in handle:
            parts = line.strip().split(",")
            if len(parts) == 2:
                try:
                    samples.append((float(parts[0]), float(parts[1])))
                except ValueError:
                    pass
except OSError:
    pass
steps = []
with open(os.path.join(out, "steps.tsv")) as handle:
    for row in csv.reader(handle, delimiter="\t"):
        name, status, t0, t1, limit, log, note = row
        t0, t1 = float(t0), float(t1)
        inside = [mib for t, mib in samples if t0 - 0.5 <= t <= t1 + 0.5]
        plan = None
        try:  # the step's own plan line: "planned peak X GB" (gpu_step, ppo_step, fspo_hhem)
            with open(log) as handle:
                found = re.findall(r"planned peak ([0-9.]+) GB", handle.read())
            plan = float(found[-1]) if found else None
        except OSError:
            pass
        steps.append({"step": name, "status": status, "seconds": round(t1 - t0, 1), "limit_s": int(limit),
                      "peak_mib": max(inside) if inside else None, "plan_gb": plan, "note": note,
                      "log": log or None})
device = None
try:
    with open(os.path.join(out, "device.txt")) as handle:
        device = handle.read().strip() or None
except OSError:
    pass
summary = {"script": "benchmarks/gpu_smoke.sh", "budget_s": budget, "elapsed_s": round(time.time() - start, 1),
           "device": device, "peak_mib_overall": max((m for _, m in samples), default=None), "steps": steps}
tmp = os.path.join(out, ".summary.json.tmp")
with open(tmp, "w") as handle:
    json.dump(summary, handle, indent=1)
os.replace(tmp, os.path.join(out, "summary.json"))
EOF
}

record() {  # name status t0 t1 limit log note
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$6" "$(echo "$7" | tr '\t\n' '  ' | sed 's/ *$//' | cut -c1-300)" >> "$STEPS"
  printf '%-12s %-8s %6ss  %s\n' "$1" "$2" "$(( ${4%.*} - ${3%.*} ))" "$7"
  write_summary
}

skip() {  # name reason
  local now; now=$(date +%s.%N)
  record "$1" SKIP "$now" "$now" 0 "" "$2"
}

run_step() {  # name limit_s command...
  local name=$1 limit=$2; shift 2
  local remaining; remaining=$(left)
  if [ "$remaining" -le 5 ]; then skip "$name" "out of time (budget ${BUDGET_S} s)"; return 1; fi
  [ "$limit" -gt "$remaining" ] && limit=$remaining
  local log="$OUT/$name.log" t0 t1 rc status note
  t0=$(date +%s.%N)
  if declare -F "$1" > /dev/null; then  # a function of this script (exported): through bash, for timeout
    timeout --kill-after=10 "$limit" bash -c "$*" > "$log" 2>&1
  else
    timeout --kill-after=10 "$limit" "$@" > "$log" 2>&1
  fi
  rc=$?
  t1=$(date +%s.%N)
  case $rc in
    0) status=PASS; note=$(grep -E '^(NOTE|gpu_step: done|100 steps ~|planned peak)' "$log" | tail -n 2 | tr '\n' ' ');;
    124|137) status=TIMEOUT; note="over its ${limit} s limit";;
    *) status=FAIL; note="exit $rc: $(grep -v '^\s*$' "$log" | tail -n 1)";;
  esac
  record "$name" "$status" "$t0" "$t1" "$limit" "$log" "$note"
  [ "$status" = PASS ]
}

# -- device memory sampler ------------------------------------------------------------------------
SAMPLER=""
if command -v nvidia-smi > /dev/null 2>&1; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$OUT/device.txt" 2>&1
  ( while :; do
      used=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | awk '{s+=$1} END {print s}')
      [ -n "$used" ] && echo "$(date +%s.%N),$used"
      sleep 0.5
    done ) > "$OUT/nvidia_smi.csv" 2>/dev/null &
  SAMPLER=$!
fi
cleanup() { [ -n "$SAMPLER" ] && kill "$SAMPLER" 2>/dev/null; write_summary; }
trap cleanup EXIT

# -- bundle: the wheels of `harness bundle`, installed without an index ----------------------------
if [ -n "$BUNDLE" ]; then
  BUNDLE_PY=${PYTHON:-python3}
  install_bundle() {
    "$BUNDLE_PY" -m pip install --no-index --no-deps --no-compile --no-warn-script-location --find-links "$BUNDLE" \
      --target "$OUT/site" --upgrade -r "$BUNDLE/requirements.txt" || return 1
    local cache; cache=$(PYTHONPATH="$OUT/site" "$BUNDLE_PY" -c 'from factrl.harness.services.models import cache_dir; print(cache_dir())') || return 1
    if [ -d "$BUNDLE/cache/models" ]; then mkdir -p "$cache/models" && cp -rn "$BUNDLE/cache/models/." "$cache/models/"; fi
    echo "NOTE: $(wc -l < "$BUNDLE/requirements.txt") wheels into $OUT/site; converted models into $cache/models"
  }
  export BUNDLE BUNDLE_PY
  export -f install_bundle
  run_step bundle 120 install_bundle
  export PYTHONPATH="$OUT/site${PYTHONPATH:+:$PYTHONPATH}" PATH="$OUT/site/bin:$PATH" PYTHON=$BUNDLE_PY
fi

# -- setup ----------------------------------------------------------------------------------------
setup() {
  local py=${PYTHON:-}
  if [ -z "$py" ] && [ -x .venv/bin/python ] && .venv/bin/python -c 'import factrl.harness' 2>/dev/null; then
    py=.venv/bin/python
  fi
  if [ -z "$py" ]; then
    echo "no Python with the harness: make setup (needs the package registry)"
    make setup || return 1
    py=.venv/bin/python
  fi
  "$py" -c 'import factrl.harness' || return 1
  echo "$py" > "$OUT/python.txt"
  local cuda_torch
  cuda_torch=$("$py" -c 'import torch; print(int(torch.version.cuda is not None))')
  if [ "$cuda_torch" = 0 ] && [ -e /dev/nvidia0 ] && [ "${GPU_SMOKE_INSTALL:-1}" = 1 ]; then
    echo "CPU-only torch on a GPU machine: trying the CUDA build (fails fast without a registry)"
    "$py" -m pip install --quiet --timeout 15 --retries 1 --force-reinstall --no-deps \
      "torch==$("$py" -c 'import torch; print(torch.__version__.split("+")[0])')" \
      --index-url https://download.pytorch.org/whl/cu128 || echo "NOTE: CUDA torch not installed (no registry)"
  fi
  if ! "$py" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("vllm") is None)' \
      && [ -e /dev/nvidia0 ] && [ "${GPU_SMOKE_INSTALL:-1}" = 1 ]; then
    echo "vLLM missing: trying pip install -e .[gpu] (fails fast without a registry)"
    "$py" -m pip install --quiet --timeout 15 --retries 1 -e ".[gpu]" || echo "NOTE: vLLM not installed (no registry)"
  fi
  # The embedded tokenizer every step uses, converted once into the harness cache.
  "$py" -c 'from factrl.harness.services import models; from factrl.harness.engine.config import compose
m = compose(["model=tiny-llama"]).model; print("tiny-llama:", models.resolve(m).path)' || return 1
  "$py" - <<'EOF' > "$OUT/capabilities.txt"
import importlib.util, torch
print(int(torch.cuda.is_available()), int(importlib.util.find_spec("vllm") is not None))
EOF
  echo "NOTE: python $py; CUDA, vLLM: $(cat "$OUT/capabilities.txt")"
}
export OUT
export -f setup
run_step setup 240 setup
PY=$(cat "$OUT/python.txt" 2>/dev/null || echo "")
read -r CUDA VLLM < "$OUT/capabilities.txt" 2>/dev/null || { CUDA=0; VLLM=0; }
[ -z "$PY" ] && PY=python3
export PY
if [ "${CUDA:-0}" = 1 ] && [ -z "${CUDA_VISIBLE_DEVICES:-}" ]; then
  export CUDA_VISIBLE_DEVICES=0  # one GPU: a one-process run refuses several (harness/engine/run/gpus.py)
fi
gpu_reason() {  # why a GPU step cannot run here, or nothing
  [ "${CUDA:-0}" = 1 ] || { echo "no CUDA"; return; }
  [ "${1:-}" = vllm ] && [ "${VLLM:-0}" != 1 ] && echo "vllm not installed"
}

# -- env ------------------------------------------------------------------------------------------
env_check() {
  "$PY" - <<'EOF'
import importlib.metadata as md, platform, time
import torch
versions = {}
for name in ("torch", "transformers", "trl", "peft", "accelerate", "vllm", "deepspeed", "factrl-harness"):
    try:
        versions[name] = md.version(name)
    except md.PackageNotFoundError:
        versions[name] = None
print("versions:", versions, "python", platform.python_version())
if not torch.cuda.is_available():
    print(f"NOTE: no CUDA (torch {torch.__version__}, built with CUDA {torch.version.cuda})")
    raise SystemExit(0)
device = torch.cuda.get_device_properties(0)
print("device:", device.name, f"{device.total_memory / 2**30:.1f} GiB", "CUDA", torch.version.cuda,
      "capability", torch.cuda.get_device_capability(0), "GPUs visible", torch.cuda.device_count())
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
for _ in range(3):
    a @ b
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(20):
    a @ b
torch.cuda.synchronize()
tflops = 20 * 2 * 8192 ** 3 / (time.perf_counter() - t0) / 1e12
q = torch.randn(4, 16, 512, 64, device="cuda", dtype=torch.bfloat16)
mask = torch.ones(4, 1, 512, 512, device="cuda", dtype=torch.bool).tril()
mask[0, :, :, :100] = False  # left padding of the first row
out = torch.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=mask)
ok = bool(torch.isfinite(out[:, :, 100:]).all())
print(f"NOTE: bf16 matmul {tflops:.0f} TFLOP/s; SDPA with a padding mask finite: {ok}; {device.name}")
raise SystemExit(0 if ok else 1)
EOF
}
export -f env_check
run_step env 45 env_check

# -- 1. gpu_step, paper shape, HF rollouts (CorVer alone: the response-only ablation doubled it) ----
reason=$(gpu_reason)
if [ -n "$reason" ]; then skip gpu_step "$reason"; else
  run_step gpu_step 150 "$PY" benchmarks/gpu_step.py --shape paper --rollout hf --steps 2 --variants corver \
    --max-completion-length 256 --out "$OUT/gpu_step.txt"
fi

# -- 1b. one PPO step of RLFH at the paper shape, with its LoRA critic -------------------------------
PAPER=(model=llama-3.2-3b model.source=random model.tokenizer_from=tiny-llama model.dtype=bfloat16)
PPO_STEP=(run "${PAPER[@]}" method=rlfh judge=reference stage=train train.steps=1 train.ppo.epochs=1
          train.max_completion_length=128 train.save_steps=100 train.require_update=false leaderboard=rundir
          "output_dir=$OUT/ppo_runs")
planned_run() {  # prints the memory plan of a `harness run` command line, then runs it
  "$PY" - "$@" <<'EOF'
import sys
from factrl.harness.engine.config import compose
from factrl.harness.training.memory_plan import GB, plan_for_config
plan = plan_for_config(compose([a for a in sys.argv[1:] if "=" in a and not a.startswith(("output_dir=", "stage="))]))
print("\n".join("plan: " + line for line in plan.lines()))
print(f"planned peak {plan.total / GB:.1f} GB")
EOF
  "$PY" -m factrl.harness.engine.cli "$@"
}
export -f planned_run
reason=$(gpu_reason)
if [ -z "$reason" ]; then run_step ppo_step 120 planned_run "${PPO_STEP[@]}"
elif [ "$(left)" -le 5 ]; then skip ppo_step "$reason"
elif "$PY" -m factrl.harness.engine.cli "${PPO_STEP[@]}" --cfg job > "$OUT/ppo_step.compose.log" 2>&1; then
  skip ppo_step "$reason (its command composes)"
else
  skip ppo_step "$reason; its command does NOT compose: $(tail -n 1 "$OUT/ppo_step.compose.log")"
fi

# -- 1c. FSPO's HHEM in bf16 on CUDA -----------------------------------------------------------------
reason=$(gpu_reason)
if [ -z "$reason" ]; then run_step fspo_hhem 60 "$PY" benchmarks/gpu_hhem.py --shape base
elif [ "$(left)" -le 5 ]; then skip fspo_hhem "$reason"
elif "$PY" benchmarks/gpu_hhem.py --shape tiny --device cpu --pairs 32 --premise-words 40 \
    > "$OUT/fspo_hhem.dry.log" 2>&1; then
  skip fspo_hhem "$reason (the tiny shape passes on the CPU)"
else
  skip fspo_hhem "$reason; the tiny shape FAILS on the CPU: $(tail -n 1 "$OUT/fspo_hhem.dry.log")"
fi

# -- 2. assets ------------------------------------------------------------------------------------
ASSETS="$OUT/assets"
run_step assets 90 "$PY" benchmarks/gpu_smoke_assets.py "$ASSETS"
MODEL=(model=tiny-llama "model.path=$ASSETS/model" model.name=smoke-llama)
[ "${CUDA:-0}" = 1 ] && MODEL+=(model.dtype=bfloat16)
SMALL=(method=corver method.extractor.backend=heuristic "corpus.index_dir=$ASSETS/corpus/index"
       corpus.tokenizer=tiny-llama corpus.cache=false pool=file "pool.path=$ASSETS/pool.json" "pool.dedup_against=[]"
       train.steps=2 train.save_steps=100 train.questions_per_step=2 train.completions_per_question=4
       train.max_completion_length=64 train.micro_batch_size=null lora.r=16 lora.alpha=32
       eval=demo eval.limit=4 eval.max_new_tokens=64 eval.cache=false leaderboard=rundir "output_dir=$OUT/runs")
VLLM_TRAIN=(train.use_vllm=true train.vllm.gpu_memory_utilization=0.25 train.vllm.enable_sleep_mode=true)

harness_step() {  # name limit needs(vllm|"") harness-args...
  local name=$1 limit=$2 needs=$3; shift 3
  local reason; reason=$(gpu_reason "$needs")
  if [ -z "$reason" ]; then run_step "$name" "$limit" "$PY" -m factrl.harness.engine.cli "$@"; return; fi
  if [ ! -d "$ASSETS/model" ]; then skip "$name" "$reason"; return; fi
  if "$PY" -m factrl.harness.engine.cli "$@" --cfg job > "$OUT/$name.compose.log" 2>&1; then
    skip "$name" "$reason (its command composes)"
  else
    skip "$name" "$reason; its command does NOT compose: $(tail -n 1 "$OUT/$name.compose.log")"
  fi
}

# -- 3. vLLM rollouts + vLLM evaluation ------------------------------------------------------------
harness_step vllm_run 150 vllm run "${MODEL[@]}" "${SMALL[@]}" "${VLLM_TRAIN[@]}" eval.backend=vllm \
  eval.vllm.gpu_memory_utilization=0.5 eval.vllm.max_model_len=1024 eval.vllm.enforce_eager=true

# -- 4. PPO, LoRA critic, vLLM rollouts -----------------------------------------------------------
reason=$(gpu_reason vllm)
if [ -n "$reason" ]; then skip ppo_vllm "$reason"; else
  run_step ppo_vllm 120 "$PY" -m tests.ppo.toy_ppo "$OUT/ppo" "model.path=$ASSETS/model" model.dtype=bfloat16 \
    "${VLLM_TRAIN[@]}" train.steps=1 train.ppo.epochs=1 train.questions_per_step=2 train.completions_per_question=2 \
    train.max_completion_length=32 lora.r=16 lora.alpha=32
fi

# -- 5. vLLM evaluation of step 3's adapter in a fresh process -----------------------------------
ADAPTER=$(ls -d "$OUT"/runs/*-corver-smoke-llama-*/train/adapter 2>/dev/null | head -n 1)
reason=$(gpu_reason vllm)
if [ -z "$reason" ] && [ -z "$ADAPTER" ]; then skip vllm_eval "no adapter from vllm_run"; else
  harness_step vllm_eval 90 vllm eval "${MODEL[@]}" "adapter=${ADAPTER:-$ASSETS/none}" eval=demo eval.limit=4 \
    eval.max_new_tokens=64 eval.backend=vllm eval.vllm.gpu_memory_utilization=0.5 eval.vllm.max_model_len=1024 \
    eval.vllm.enforce_eager=true eval.cache=false "output_dir=$OUT/evals"
fi

# -- 6. HF generation and HF evaluation on CUDA -----------------------------------------------------
harness_step hf_run 90 "" run "${MODEL[@]}" "${SMALL[@]}" train.use_vllm=false eval.backend=hf

# -- 7. the PPO critic's gradients under gradient checkpointing, on CUDA ---------------------------
reason=$(gpu_reason)
if [ -n "$reason" ]; then skip critic_ckpt "$reason"; else
  run_step critic_ckpt 60 "$PY" -m pytest tests/ppo/test_critic_checkpointing.py -q -p no:cacheprovider
fi

write_summary
"$SUMMARY_PY" - "$OUT/summary.json" <<'EOF'
import json, re, sys
summary = json.load(open(sys.argv[1]))
steps = {s["step"]: s for s in summary["steps"]}
gb = lambda mib: "-" if mib is None else f"{mib * 2**20 / 1e9:.1f} GB"  # noqa: E731
print("step         status   seconds  peak      plan")
for s in summary["steps"]:
    plan = "-" if s.get("plan_gb") is None else f"{s['plan_gb']:.1f} GB"
    print(f"{s['step']:<12} {s['status']:<8} {s['seconds']:>7}  {gb(s['peak_mib']):<9} {plan}")
def lines(name, pattern):
    try:
        return [l.strip() for l in open(steps[name]["log"]) if re.match(pattern, l)]
    except (KeyError, OSError, TypeError):
        return []
def status(name):
    s = steps.get(name, {})
    return f"{s.get('status', 'absent')}: {s.get('note', '')}".strip()
protocol = lines("gpu_step", r"100 steps ~ ")
speed = lines("gpu_step", r"generation: ")
print(protocol[-1] if protocol else f"100 steps ~ ?:?? at the 1,000-token limit (gpu_step {status('gpu_step')})")
print("corver: " + (speed[-1] if speed else status("gpu_step")))
ppo = steps.get("ppo_step", {})
if ppo.get("status") == "PASS":
    print(f"rlfh: one PPO step with its LoRA critic (judge=reference, paper shape, 128 tokens) in {ppo['seconds']} s, "
          f"peak {gb(ppo.get('peak_mib'))} against a plan of {ppo.get('plan_gb')} GB")
else:
    print(f"rlfh: one PPO step with its LoRA critic: {status('ppo_step')}")
hhem = lines("fspo_hhem", r"NOTE: HHEM")
print("fspo: " + (hhem[-1][len("NOTE: "):] if hhem else status("fspo_hhem")))
EOF
echo "summary: $OUT/summary.json ($(( $(date +%s) - START )) s)"
exit 0
