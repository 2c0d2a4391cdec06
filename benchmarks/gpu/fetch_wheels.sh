# Run HERE (a machine with the package registries), from the repository root, before a GPU
# session: downloads into .whl/ (git-ignored) the wheels the GPU machine's image lacks, for its
# Python 3.12: rigbench's pure dependencies and Keras 3 (keras-jax, keras-torch). The image has
# torch, JAX, flax, optax, numpy, rich, typer, psutil, nvidia-ml-py, jinja2, matplotlib, h5py,
# ml-dtypes and absl-py (/work/.library/device/KINDS.md), but no TensorFlow: its CUDA wheel
# (~600 MB) is over the 64 MiB a call may carry. Versions: the ones this dev venv runs.
set -eu
rm -rf .whl && mkdir -p .whl
versions=$(. .venv/bin/activate && python - <<'PY'
from importlib.metadata import version
names = ["pydantic", "pydantic_core", "annotated_types", "typing_inspection", "typing_extensions",
         "sqlalchemy", "greenlet", "alembic", "mako", "platformdirs", "keras", "namex", "optree"]
print(" ".join(f"{n}=={version(n)}" for n in names))
PY
)
for spec in $versions; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl "$spec"
done
ls .whl; du -sh .whl
