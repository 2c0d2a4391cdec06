# GPU session, part 3: joules per sample (issue 13) for cnn, resnet and catsdogs at three batch
# sizes and two precisions; bf16 with torch.compile; GPU out-of-memory probes; the lr above
# which digits diverges. Usage (GPU machine, repo root, .gpu/gpu.db carried): bash benchmarks/gpu/run3.sh
set -u
. benchmarks/gpu/setup.sh
cp .gpu/gpu.db $OUT/gpu.db; export RIGBENCH_DB=$OUT/gpu.db
step() { echo; echo "=== $(date +%T) $*"; "$@"; echo "=== rc=$?"; }
step timeout 280 rigbench sweep cnn resnet catsdogs -d cuda:0 -b 32,128,512 --precision fp32,bf16 --seconds 1.5
step timeout 70 rigbench run catsdogs -d cuda:0 -b 64 --precision bf16 --compile
# The three tests fixed after part 2, on this machine's CUDA torch, while the probes run
# (probes report memory, not speed).
(timeout 120 python3 -m pytest -p no:cacheprovider -n 3 -q tests/e2e/test_compare_cli.py tests/integration/test_max_batch.py tests/e2e/test_cli.py -k "compare_export or largest_batch_under or failed_trials_are_stored" > $OUT/pytest3.log 2>&1 &)
step timeout 125 rigbench max-batch catsdogs -d cuda:0 --start 768 --tolerance 0.15
sleep 1; tail -3 $OUT/pytest3.log
step timeout 35 rigbench train mlp --dataset digits -d cuda:0 --epochs 5 -b 32 --lr 0.1,0.5
tail -3 $OUT/pytest3.log
