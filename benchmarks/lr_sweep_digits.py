"""A learning-rate sweep on `digits`: too small converges slowly, too large degrades or diverges.

Trains one workload (default mlp, SGD with momentum 0.9 as the workload defines) for a few
epochs at each learning rate, in this process through the torch adapter's `train`, and prints
one row per rate: held-out accuracy after each epoch, the final accuracy, and whether the
loss diverged (NaN/inf; the epoch it happened in). `digits` ships with scikit-learn, so this
runs offline in about a minute on two CPU cores.

Usage: python benchmarks/lr_sweep_digits.py [--workload mlp] [--lrs 0.0005,0.005,0.05,0.1,0.5,5]
                                            [--epochs 5] [--batch 32] [--threads 2] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

from rigbench.data import load_for_workload
from rigbench.frameworks import torch as adapter
from rigbench.frameworks.driver import training
from rigbench.frameworks.run_records import TrainingDiverged
from rigbench.spec import EpochRecord, TrainOptions, TrialSpec
from rigbench.workloads import get_workload


def sweep_one(workload: str, lr: float, args: argparse.Namespace, data) -> tuple[list[EpochRecord], int | None]:
    """(finished epochs, epoch it diverged in or None) for one learning rate."""
    spec = TrialSpec(workload=workload, device="cpu", batch_size=args.batch, threads=args.threads, lr=lr,
                     seed=args.seed, train=TrainOptions(dataset="digits", epochs=args.epochs))
    try:
        return training.train(adapter.build, spec, get_workload(workload), data).epochs, None
    except TrainingDiverged as exc:
        return exc.epochs, exc.step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="mlp")
    parser.add_argument("--lrs", default="0.0005,0.005,0.05,0.1,0.5,5")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    workload = get_workload(args.workload)
    data = load_for_workload(workload.name, "digits")
    print(f"{workload.name} on digits ({len(data.x_train)} train / {len(data.x_test)} test), "
          f"{workload.optimizer} (default lr {workload.default_lr}), batch {args.batch}, "
          f"{args.epochs} epochs, seed {args.seed}")
    epoch_cols = "  ".join(f"ep{i:<3d}" for i in range(1, args.epochs + 1))
    print(f"{'lr':>8}  {epoch_cols}  {'final':>6}  {'loss':>7}  diverged")
    for lr in (float(x) for x in args.lrs.split(",")):
        start = time.perf_counter()
        epochs, diverged_at = sweep_one(workload.name, lr, args, data)
        accs = [f"{r.accuracy:.3f}" for r in epochs] + ["  -  "] * (args.epochs - len(epochs))
        final = f"{epochs[-1].accuracy:.3f}" if epochs else "-"
        loss = f"{epochs[-1].train_loss:.4f}" if epochs else "-"
        verdict = f"yes, epoch {diverged_at}" if diverged_at else "no"
        print(f"{lr:>8g}  {'  '.join(accs)}  {final:>6}  {loss:>7}  {verdict}"
              f"   ({time.perf_counter() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
