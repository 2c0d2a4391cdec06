# Source this on the lent GPU machine (Python 3.12 image with CUDA torch, no network):
# installs rigbench's missing pure dependencies from wheels carried in .whl/ and rigbench
# itself (editable, offline), then prints what the machine is.
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >/dev/null
nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv
python3 -c "import torch, rigbench; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0)); print('rigbench', rigbench.__version__)"
nproc; free -g | head -2
