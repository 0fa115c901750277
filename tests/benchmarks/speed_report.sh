#!/bin/sh
# The speed report of docs/speed.md: every mode on the bundled prompt set, as ratios within each run.
#   tests/benchmarks/speed_report.sh [OUT_DIR]      (about an hour on 2 CPU cores)
# Linux: run with Debian's OpenBLAS preloaded (as make does); BLAS=reference runs the wheel's own BLAS.
set -eu
cd "$(dirname "$0")/../.."
OUT=${1:-benchmark-results}
PY=.venv/bin/python
M=$OUT/models
mkdir -p "$OUT"
$PY -m tests.benchmarks.prepare_models "$M" >/dev/null
OPENBLAS=$(ls /usr/lib/*-linux-gnu/openblas-pthread/libopenblas.so.0 2>/dev/null | head -1 || true)
if [ "${BLAS:-openblas}" = openblas ] && [ -n "$OPENBLAS" ]; then export LD_PRELOAD=$OPENBLAS; fi
bench() { name=$1; shift; $PY -m engine benchmark --chat --json --plot "$OUT/$name.svg" "$@" > "$OUT/$name.json"; echo "done: $name"; }

# 1. A draft that never agrees: fixed K and mlx-lm lose; adaptive falls back; prompt lookup needs no draft.
bench random --target $M/smollm2 --draft $M/smollm2-random --max-tokens 128 --iterations 2 --follow-up \
  --modes standard,mlx-lm-standard,speculative,mlx-lm-speculative,adaptive,prompt-lookup,prompt-lookup-fixed,adaptive+lookup
# 2. A related draft, greedy, same K as mlx-lm.
bench related-greedy --target $M/smollm2 --draft $M/smollm2-q4 --max-tokens 96 \
  --modes standard,speculative,mlx-lm-speculative,adaptive
# 3. The same pair at temperature 1: rejection sampling against mlx-lm's sample-and-match.
bench related-t1 --target $M/smollm2 --draft $M/smollm2-q4 --max-tokens 96 --temp 1.0 --seed 0 \
  --modes standard,speculative,mlx-lm-speculative
# 4. Tiny models (Python overhead matters most here, and this VM's noise too: five iterations).
bench tiny --target $M/tiny/tiny-target --draft $M/tiny/tiny-draft --max-tokens 200 --iterations 5 \
  --modes standard,mlx-lm-standard,speculative,mlx-lm-speculative,adaptive,prompt-lookup,prompt-lookup-fixed
# 5. Standard decoding against mlx-lm's stream_generate, more iterations.
bench standard-vs-mlx-lm --target $M/smollm2 --max-tokens 128 --iterations 3 --modes standard,mlx-lm-standard
# 6. The never-agreeing draft again, adaptive against standard only, more iterations: the 0.95x criterion
#    is a few percent, and single runs here vary by 10-20%. With the follow-up turn's time to first token.
bench never-agrees --target $M/smollm2 --draft $M/smollm2-random --max-tokens 128 --iterations 4 --follow-up \
  --modes standard,adaptive
# 7. The mlx[cpu] wheel's own reference BLAS: verifying K tokens costs K+1 steps, so nothing can win.
$PY -c "import json; p=json.load(open('resources/prompts/benchmark.json')); json.dump([x for x in p if x['category'] in ('chat', 'code-editing')], open('$M/chat-and-editing.json', 'w'))"
LD_PRELOAD= bench reference-blas --target $M/smollm2 --draft $M/smollm2-random --max-tokens 64 \
  --prompt-file "$M/chat-and-editing.json" --modes standard,speculative,adaptive,prompt-lookup,prompt-lookup-fixed
$PY -m tests.benchmarks.report "$OUT"
