# GPU session, part 1: the test suite on the GPU, the hand checks, the default suite.
# Usage (on the GPU machine, repo root): bash benchmarks/gpu/run1.sh  (writes under $OUT)
set -u
. benchmarks/gpu/setup.sh
export RIGBENCH_DB=$OUT/gpu.db
step() { echo; echo "=== $(date +%T) $*"; "$@"; echo "=== rc=$?"; }
step timeout 120 python3 -m pytest -p no:cacheprovider -n 0 -m gpu -v tests/unit/test_torch_models.py 2>&1 | tail -8
step timeout 150 python3 benchmarks/gpu_checks.py --steps 40 2>&1
step timeout 180 rigbench run -d cuda:0
step rigbench devices
step timeout 200 python3 -m pytest -p no:cacheprovider -n 14 -q --timeout 170 2>&1 | tee $OUT/pytest.log | tail -30
