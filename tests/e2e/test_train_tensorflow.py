"""`rigbench train` with the TensorFlow adapter through a real subprocess on the real `digits`
data set: the Keras model, its GradientTape step and the shared training loop learn."""

import json
import subprocess
import sys

import pytest

pytest.importorskip("sklearn")
if __import__("importlib.util").util.find_spec("tensorflow") is None:
    pytest.skip("tensorflow is not installed", allow_module_level=True)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]


def test_train_digits_with_tensorflow_reaches_90_percent(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "rigbench", "train", "mlp", "--dataset", "digits",
                           "--framework", "tensorflow", "-d", "cpu", "--epochs", "4", "--threads", "2",
                           "--db", str(tmp_path / "train.db"), "--json"],
                          capture_output=True, text=True, timeout=380)
    assert proc.returncode == 0, proc.stderr
    (result,) = json.loads(proc.stdout)
    assert result["status"] == "ok" and result["framework"] == "tensorflow" and result["epochs"] == 4
    assert len(result["accuracy_per_epoch"]) == 4
    assert result["final_accuracy"] >= 0.9
    assert result["software"]["keras"] and result["software"]["num_threads"] == 2
