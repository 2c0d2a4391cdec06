# GPU session, round 2 (issue 26, and issue 24's gpt small bf16 MFU per framework).
#
# Before the session, HERE: bash benchmarks/gpu/fetch_wheels.sh (fills the git-ignored .whl/).
# On the lent GPU machine, from the repository root, carrying .whl (and .gpu, holding gpu.db, from
# an earlier part): bash benchmarks/gpu/round2.sh PART [PART...]. Results go to $OUT/gpu.db, the
# pytest log to $OUT. Each part ends well inside one 10-minute call (several parts in one call
# share its set-up); the machine goes back 30 s after a call, so every call installs again
# (seconds) and starts from the database carried in .gpu/.
#
# Parts (the frameworks the machine's image has: torch, JAX, Keras 3 from the wheels; TensorFlow's
# CUDA wheel is too large to carry):
#   tests         pytest -m gpu: tests/integration/test_gpu_paths.py (every framework's trial and
#                 memory figures on the GPU, one rank through each data-parallel agent with NCCL
#                 for torch and the all-reduce check, CUDA trials in a row) and the torch GPU tests,
#                 then mlp and cnn plain and under --data-parallel (one rank, NCCL)
#   gpt           gpt small (GPT-2 124M shape) at bf16 in every framework, then torch compiled
#                 at two batches: MFU per framework (issue 24 aims at >= 40% in the best)
#   gpt-batches   gpt small at bf16, torch compiled at batch 64 and JAX at 32 and 64: the
#                 batches the H200 lease (docs/results/gpu-h200.md) had no time for
#   vit           vit s224 at bf16 in every framework
#   transformers  gpt, then vit
#   calibrate     the measured bf16 and fp32 matmul peaks (MFU against the measured peak)
#   frameworks    cnn (b128), resnet, lstm in every framework at fp32 and bf16: compare --frameworks
#   small         the launch-bound small networks eager, compiled and as CUDA graphs (torch.compile
#                 reduce-overhead), and JAX's always-compiled step beside them (issue 26, point 3)
#   overhead      mlp, autoencoder and cnn eager at b32, b128 and b512 (the step-overhead line's
#                 fit), then `rigbench recommend cnn`, which measures torch.compile's modes itself
#                 where the step proves overhead-bound
#   lease         one lease's worth (bounded at 9.5 minutes; 7.5 on the H200): cnn, resnet, lstm in torch, JAX
#                 and Keras on JAX at fp32 and bf16 (point 1), mlp and cnn eager against CUDA graphs
#                 (point 3), gpt small compiled at batch 64 (the MFU aim)
#   pytest        the pytest step of `tests` alone
#   timers        benchmarks/timer_check.py: each framework's recorded step times against a host
#                 clock around the same steps and against a loop that never waits (point 1)
#   pools         XLA's GPU pool limit under JAX's defaults and under rigbench's environment,
#                 beside the device's memory (max-batch's limit): the same meaning in every framework
#   keras-torch   cnn at b128 in Keras on torch, fp32 and bf16
#   lease3        the third H200 lease (bounded at about 9 minutes): pytest, timers, pools,
#                 keras-torch, layout
#   rerun         cnn, resnet, lstm at b128 in torch and JAX, fp32 and bf16: the second lease's
#                 JAX figures again with the windowed host timer (docs/results/gpu-h200-timers.md)
#   maxbatch      max-batch of catsdogs (22 MiB a sample on the H100) in torch and JAX from b1024,
#                 until an out-of-memory: whether the two searches stop at the same memory
#   lease4        the fourth lease's first call (435 s): timers, rerun, pytest; then, in a second
#                 call on the warm machine, maxbatch (docs/results/gpu-h200-lease4.md)
#   events        the host's cost of one CUDA event made and recorded, and of one recorded only
#   lease5        the next lease (about 8.5 minutes): events, timers and rerun (the first window
#                 sized from the warm-up), then max-batch of catsdogs in JAX alone; then, in a
#                 second call on the warm machine, shared (about 4 minutes)
#   layout        resnet and cnn in torch at fp32 and bf16, NCHW and NHWC (--channels-last): whether
#                 the layout rescues torch's bf16, slower than its fp32 on the H200
#                 (docs/results/gpu-h200-frameworks.md)
#   suite         the default suite: run it on an H100 and on an H200 for `rigbench compare`
#   maxbatch-leap max-batch of catsdogs in torch from the default --start (8): the growth's leaps
#                 (x4/x8 where the memory line leaves room) on a GPU, whose peaks can fall as the
#                 batch grows (cuDNN's workspace): there the search must double, as before
#   resnet-repeat resnet at b128, fp32, three rounds (--repeat 3): the H200 read x0.73 of the H100
#                 with its step times drifting within each trial (docs/results/gpu-h200.md section 4);
#                 run it on both kinds, then `rigbench compare` judges on trials, not steps
#   shared        cnn and resnet quiet, then beside a second process that keeps the same GPU busy
#                 with matmuls: how much a shared GPU costs, and whether anything flags it (the
#                 `busy` rule reads the CPU only: docs/METHODOLOGY.md "A busy machine"); prints
#                 each trial's samples/s, GPU %, others' CPU share, the other processes on the
#                 GPU and their kernels' share (`gpu_others_sm_pct_mean`), and the table's notes
# Then, HERE, on the returned gpu.db: rigbench compare --frameworks, rigbench roofline,
# rigbench compare RUN_A RUN_B (H100 against H200), rigbench compare --published.
#
# Dry run on a machine without a GPU: DEVICE=cpu QUICK=--quick GPT=gpt VIT=vit BATCH=8
# bash benchmarks/gpu/round2.sh PART (OUT defaults to ./.gpu-dry).
set -u
[ $# -gt 0 ] || { echo "usage: bash benchmarks/gpu/round2.sh PART [PART...]" \
  "(tests pytest timers pools keras-torch lease3 rerun maxbatch lease4 events lease5 gpt gpt-batches lease layout vit transformers calibrate frameworks small overhead suite maxbatch-leap resnet-repeat shared)"; exit 2; }
DEVICE=${DEVICE:-cuda:0}
QUICK=${QUICK:-}
GPT=${GPT:-gpt:preset=small}
VIT=${VIT:-vit:preset=s224}
BATCH=${BATCH:-}
FRAMEWORKS=${FRAMEWORKS:-torch,jax,keras-jax,keras-torch}
export OUT=${OUT:-$PWD/.gpu-dry}
mkdir -p "$OUT"
if [ "$DEVICE" != cpu ]; then
  . benchmarks/gpu/setup.sh
  python3 -c "import jax; print('jax', jax.__version__, jax.devices())"
  KERAS_BACKEND=jax python3 -c "import keras; print('keras', keras.__version__, keras.backend.backend())"
fi
[ -f .gpu/gpu.db ] && cp .gpu/gpu.db "$OUT/gpu.db"
export RIGBENCH_DB=$OUT/gpu.db
step() { echo; echo "=== $(date +%T) $*"; "$@"; echo "=== rc=$?"; }
run() { step timeout "$1" rigbench "${@:2}" -d "$DEVICE" $QUICK -y; }
part() {
case $1 in
  pytest)
    step timeout 240 env RIGBENCH_TEST_GPU_DEVICE="$DEVICE" python3 -m pytest -p no:cacheprovider -n 0 -m gpu -v \
      -rfE tests/integration/test_gpu_paths.py tests/unit/test_torch_models.py > "$OUT/pytest-gpu.log" 2>&1
    grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed" "$OUT/pytest-gpu.log" | tail -25 ;;
  timers)
    step timeout 120 python3 benchmarks/timer_check.py --device "$DEVICE" --steps 60 \
      --cases torch:cnn:128,jax:cnn:128,keras-jax:cnn:128,keras-torch:cnn:128,jax:mlp:64 | tee "$OUT/timers.jsonl" ;;
  pools)
    # bytes_limit of XLA's pool: JAX's defaults (no preallocation) against rigbench's environment
    code="import jax; d = jax.devices()[0]; print(d.memory_stats()['bytes_limit'], jax.__version__)"
    step timeout 40 env XLA_PYTHON_CLIENT_PREALLOCATE=false python3 -c "$code"
    step timeout 40 python3 -c "import os, subprocess, sys
from rigbench.frameworks import load_adapter
from rigbench.spec import TrialSpec
env = {**os.environ, **load_adapter('jax').environment(TrialSpec(workload='mlp', batch_size=8, framework='jax'))}
print({k: v for k, v in env.items() if k.startswith('XLA_')})
subprocess.run([sys.executable, '-c', sys.argv[1]], env=env, check=True)" "$code"
    nvidia-smi --query-gpu=memory.total --format=csv ;;
  keras-torch)
    run 90 sweep cnn -b "${BATCH:-128}" --precision fp32,bf16 --framework keras-torch ;;
  lease3) part pytest; part timers; part pools; part keras-torch; part layout ;;
  rerun)
    run 240 sweep cnn resnet lstm -b "${BATCH:-128}" --precision fp32,bf16 --framework torch,jax ;;
  maxbatch)
    # JAX's probe at 1024 did not finish in 40 s in the fourth lease (a fresh process compiles)
    step timeout 100 rigbench max-batch catsdogs -d "$DEVICE" --framework torch --start "${BATCH:-1024}" \
      --tolerance 0.25 --timeout 40
    step timeout 400 rigbench max-batch catsdogs -d "$DEVICE" --framework jax --start "${BATCH:-1024}" \
      --tolerance 0.25 --timeout 120 ;;
  lease4) part timers; part rerun; part pytest ;;
  events)
    # what torch's CUDA event timer costs the host a step (two events made and recorded): its
    # recorded steps read 1.05x a free loop's in the third and fourth leases
    step timeout 60 python3 -c "import time, torch
s = torch.cuda.current_stream(); n = 20000; torch.ones(1, device='cuda').sum().item()
t = time.perf_counter(); [torch.cuda.Event(enable_timing=True).record(s) for _ in range(n)]; torch.cuda.synchronize()
made = (time.perf_counter() - t) / n
events = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
t = time.perf_counter(); [e.record(s) for e in events]; torch.cuda.synchronize()
print(f'an event made and recorded: {made * 1e6:.2f} us; recorded only: {(time.perf_counter() - t) / n * 1e6:.2f} us')" ;;
  lease5)
    part events; part timers; part rerun
    step timeout 240 rigbench max-batch catsdogs -d "$DEVICE" --framework jax --start "${BATCH:-1024}" \
      --tolerance 0.25 --timeout 120 ;;
  tests)
    part pytest
    step timeout 60 rigbench devices
    # one rank under DDP with NCCL (and jax.distributed) beside the same trials without it:
    # the wrapper's own cost on the GPU (issue 26, point 2)
    step timeout 120 rigbench run mlp cnn --framework torch,jax -d "$DEVICE" $QUICK
    step timeout 150 rigbench run mlp cnn --framework torch,jax -d "$DEVICE" $QUICK --data-parallel ;;
  gpt)
    run 210 sweep "$GPT" --precision bf16 --framework "$FRAMEWORKS" -b "${BATCH:-16}" --seconds 3
    run 100 sweep "$GPT" --precision bf16 --compile on -b "${BATCH:-16,32}" --seconds 3 ;;
  gpt-batches)
    # the two fastest at larger batches (the H200 lease: torch compiled 38.5% MFU at 32, JAX 36.4% at 16)
    run 150 sweep "$GPT" --precision bf16 --compile on -b "${BATCH:-64}" --seconds 3
    run 150 sweep "$GPT" --precision bf16 --framework jax -b "${BATCH:-32,64}" --seconds 3 ;;
  lease)
    run 140 sweep cnn -b "${BATCH:-128}" --precision fp32,bf16 --framework torch,jax,keras-jax
    run 230 sweep resnet lstm ${BATCH:+-b $BATCH} --precision fp32,bf16 --framework torch,jax,keras-jax
    run 110 sweep mlp cnn ${BATCH:+-b $BATCH} --compile off,reduce-overhead
    run 90 sweep "$GPT" --precision bf16 --compile on -b "${BATCH:-64}" --seconds 3 ;;
  layout)
    run 150 sweep resnet cnn -b "${BATCH:-128}" --precision fp32,bf16 --channels-last off,on ;;
  vit)
    run 150 sweep "$VIT" --precision bf16 --framework "$FRAMEWORKS" -b "${BATCH:-64}" --seconds 2 ;;
  transformers) part gpt; part vit ;;
  calibrate)
    step timeout 60 rigbench calibrate -d "$DEVICE" --precision bf16,fp32 ;;
  frameworks)
    run 200 sweep cnn -b "${BATCH:-128}" --precision fp32,bf16 --framework "$FRAMEWORKS"
    run 330 sweep resnet lstm ${BATCH:+-b $BATCH} --precision fp32,bf16 --framework "$FRAMEWORKS" ;;
  small)
    run 400 sweep mlp autoencoder cnn ${BATCH:+-b $BATCH} --compile off,on,reduce-overhead
    run 150 sweep mlp autoencoder cnn ${BATCH:+-b $BATCH} --framework jax ;;
  overhead)
    run 150 sweep mlp autoencoder cnn -b "${BATCH:-32,128,512}"
    step timeout 420 rigbench recommend cnn -d "$DEVICE" $QUICK ;;
  suite)
    step timeout 300 rigbench run -d "$DEVICE" $QUICK ;;
  maxbatch-leap)
    step timeout 200 rigbench max-batch catsdogs -d "$DEVICE" --framework torch --tolerance 0.25 --timeout 40 ;;
  resnet-repeat)
    step timeout 240 rigbench run resnet -b "${BATCH:-128}" --repeat 3 -d "$DEVICE" $QUICK ;;
  shared)
    step timeout 120 rigbench run cnn resnet -d "$DEVICE" $QUICK
    # the other tenant: 8192^2 matmuls back to back on the same device, for 100 s at most
    python3 -c "import time, torch
x = torch.randn(8192, 8192, device='$DEVICE')
end = time.time() + 100
while time.time() < end:
    x @ x
    torch.cuda.synchronize() if x.is_cuda else None" &
    TENANT=$!
    sleep 5
    step timeout 120 rigbench run cnn resnet -d "$DEVICE" $QUICK
    kill $TENANT
    rigbench results export --format csv | python3 -c "import csv, sys
for r in list(csv.DictReader(sys.stdin))[-4:]:
    print(r['id'], r['workload'], r['samples_per_s'], 'GPU %', r['gpu_util_pct_mean'], 'others CPU %', r['others_cpu_pct_mean'],
          'others on the GPU', r['gpu_other_processes_max'], 'their SM %', r['gpu_others_sm_pct_mean'])"
    rigbench results list --limit 4 ;;
  *) echo "unknown part $1"; exit 2 ;;
esac
}
for name in "$@"; do part "$name"; done
step rigbench results list --limit 60
