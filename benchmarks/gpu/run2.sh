# GPU session, part 2: the energy counter check, the whole test suite on the GPU machine,
# calibration, max-batch out-of-memory probes, training on digits, the CPU at batch 128.
# (roofline and compare --published need no GPU: they run on the returned database.)
# Usage (on the GPU machine, repo root, .gpu/gpu.db carried from part 1): bash benchmarks/gpu/run2.sh
set -u
. benchmarks/gpu/setup.sh
cp .gpu/gpu.db $OUT/gpu.db; export RIGBENCH_DB=$OUT/gpu.db
step() { echo; echo "=== $(date +%T) $*"; "$@"; echo "=== rc=$?"; }
step timeout 40 python3 benchmarks/gpu_checks.py --energy-only
step timeout 230 python3 -m pytest -p no:cacheprovider -n 16 -v -rfE --timeout 200 > $OUT/pytest.log 2>&1
grep -E "FAILED|ERROR|passed|failed" $OUT/pytest.log | grep -v "PASSED" | tail -15
step timeout 100 rigbench calibrate -d cuda:0 --precision fp32,tf32,bf16
step timeout 110 rigbench max-batch catsdogs -d cuda:0
step timeout 40 rigbench run cnn -d cpu -b 128
step timeout 70 rigbench train mlp --dataset digits -d cuda:0 --epochs 5 -b 32 --lr 0.0005,0.005,0.05,0.1,0.5
step timeout 40 rigbench train cnn --dataset digits -d cuda:0 --epochs 5 --target-accuracy 0.9
