#!/usr/bin/env bash
# Fetch, here (where pip reaches the package index), the wheels of the pure-Python dependencies
# that the lent GPU image lacks (pydantic and its own dependencies, at the versions pinned in
# constraints.txt) into ./.whl, for the GPU machine's Python 3.12 on x86-64. Then carry `.whl`
# with the GPU run: scripts/gpu_checks.sh installs them there offline (pip --no-index, into a
# temporary folder). Run once, in the repository root:
#
#   bash scripts/gpu_wheels.sh && grep -qx '/.whl/' .git/info/exclude || echo /.whl/ >> .git/info/exclude
set -eu
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
names=(pydantic pydantic_core annotated-types typing-inspection typing_extensions)
pins=()
for name in "${names[@]}"; do
  pin=$(grep -i -E "^${name//[-_]/[-_]}==" constraints.txt) || { echo "gpu_wheels.sh: $name is not pinned in constraints.txt" >&2; exit 1; }
  pins+=("$pin")
done
mkdir -p .whl
"$PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .whl "${pins[@]}"
ls .whl
