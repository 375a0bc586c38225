"""The lab's model lists come from the registry: a toy sixth model registered in the library's
tests (``tests/test_registry.py``'s ``TOY``) is in the throughput command's, the roofline's and
the runtimes report's defaults and in the comparison's cells, with no other edit."""

from absl import flags
from test_registry import TOY

from re2_lab import compare as comparison
from re2_lab.cli import compare, roofline, runtimes, throughput
from re2_tf.models import model_names, registered


def test_a_toy_sixth_model_is_in_every_lab_list():
    with registered(TOY):
        for command in (throughput, compare, roofline, runtimes):
            values = flags.FlagValues()
            command.define_flags(values)
            assert values["models"].default[-1] == "toy", command.__name__
        cells = {dict(c.settings)["model"]: c.base for c in comparison.cells("snli_check")}
        assert list(cells) == list(model_names())
        assert cells["toy"] == ("--model=toy", "--dataset=snli")  # no flagfile: its preset
    assert "toy" not in model_names()
