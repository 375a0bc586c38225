"""A model spec only names its task loss; training resolves the name.

- ``re2_tf.models.spec`` imports nothing from ``re2_tf.training`` (checked in a fresh
  interpreter, after asking every registered spec for its loss name, and in the module's
  source, so an import hidden inside a function is caught too);
- ``re2_tf.training.losses.resolve_task_loss`` rejects a name that is not a task loss with a
  ValueError naming the model and the known losses;
- ``output_kind`` is the resolved loss's output: ``logits`` for softmax cross-entropy (a
  distribution over classes), ``score`` for the pairwise hinge and squared error (one real
  number per pair: Wan et al. 2016, §4.4 and Eq. 6).
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from re2_tf.models.spec import HParam, ModelSpec

SPEC_SOURCE = Path(__file__).resolve().parents[1] / "re2_tf" / "models" / "spec.py"


def _spec(task_loss, hparams=None):
    return ModelSpec(
        name="toy",
        build=lambda *a, **k: None,
        hparams=hparams or {},
        features={},
        task_loss=task_loss,
    )


def test_importing_and_using_specs_does_not_import_training():
    code = (
        "import sys\n"
        "import re2_tf.models.spec\n"
        "import re2_tf.models\n"
        "names = {n: s.task_loss_name() for n, s in re2_tf.models.MODEL_SPECS.items()}\n"
        "assert names, 'no registered model'\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('re2_tf.training'))\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-2000:]


def test_spec_source_has_no_training_import():
    imported = []
    for node in ast.walk(ast.parse(SPEC_SOURCE.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.append(node.module)
        elif isinstance(node, ast.Import):
            imported.extend(alias.name for alias in node.names)
    assert not [m for m in imported if m.startswith("re2_tf.training")], imported


def test_unknown_loss_is_rejected_by_training_with_a_clear_error():
    from re2_tf.training.losses import output_kind, resolve_task_loss

    spec = _spec("hinge_squared")
    assert spec.task_loss_name() == "hinge_squared"  # the spec only names it
    for resolve in (resolve_task_loss, output_kind):
        with pytest.raises(ValueError) as error:
            resolve(spec)
        message = str(error.value)
        assert "'toy'" in message and "'hinge_squared'" in message
        for known in ("pairwise_hinge", "softmax_cross_entropy", "squared_error"):
            assert known in message


def test_hparam_chosen_loss_resolves_and_gives_its_output_kind():
    from re2_tf.training.losses import (
        PairwiseHinge,
        SoftmaxCrossEntropy,
        SquaredError,
        output_kind,
        resolve_task_loss,
    )

    spec = _spec("hparam:loss", {"loss": HParam("softmax_cross_entropy", "task loss")})
    cases = {
        None: (SoftmaxCrossEntropy, "logits"),
        "softmax_cross_entropy": (SoftmaxCrossEntropy, "logits"),
        "pairwise_hinge": (PairwiseHinge, "score"),
        "squared_error": (SquaredError, "score"),
    }
    for loss, (cls, kind) in cases.items():
        hparams = None if loss is None else {"loss": loss}
        assert isinstance(resolve_task_loss(spec, hparams), cls)
        assert output_kind(spec, hparams) == kind
    with pytest.raises(ValueError, match="'toy'.*'ranknet'"):
        resolve_task_loss(spec, {"loss": "ranknet"})
