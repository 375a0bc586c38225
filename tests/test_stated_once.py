"""Each model's hyper-parameters and training defaults are stated once, in its ``ModelSpec``.

The ``<NAME>_DEFAULTS`` dicts and the builders' keyword defaults must be the spec's values, and
a docstring that restates a default writes it as ``name=value`` (a Python literal between double
backticks), which is checked here against the defaults a run of that model resolves
(``TrainConfig(model=...)``: common defaults < the spec's ``training`` < its hyper-parameter
defaults). Figures the docstrings attribute to a paper are not defaults and are not checked.
"""

import ast
import importlib
import inspect
import re

import pytest
from registered import models

from re2_tf import TrainConfig
from re2_tf.models.spec import get_spec

#: model -> (module, its ``*_DEFAULTS`` dict, its builder): every registered model, whose
#: module names them ``<MODEL>_DEFAULTS`` and ``build_<model>``.
MODELS = {
    name: (get_spec(name).build.__module__, f"{name.upper()}_DEFAULTS", f"build_{name}")
    for name in models()
}

#: ``name=value`` between double backticks; the value is parsed as a Python literal.
MENTION = re.compile(r"``([a-z_][a-z0-9_]*)=([^`\s][^`]*)``")


def mentions(text):
    """``[(name, value)]`` of every ``name=value`` in ``text``."""
    return [(name, ast.literal_eval(value)) for name, value in MENTION.findall(text or "")]


def resolved_defaults(model):
    """What a run of ``model`` uses when nothing is set, without a dataset's preset (the
    default dataset, the bundled sample, has our small ``sample`` preset for every model):
    training fields and hyper-parameters."""
    config = TrainConfig(model=model, preset="none")
    values = {
        name: getattr(config, name)
        for name in dir(config)
        if not name.startswith("_") and not callable(getattr(config, name))
    }
    values.update(config.hparams)
    return values


def test_mentions_parse_literals():
    text = 'a ``dropout=0.2`` and ``autoencoder_layers="3,5"`` but not ``--lr=1`` or ``d_m = 5``'
    assert mentions(text) == [("dropout", 0.2), ("autoencoder_layers", "3,5")]


@pytest.mark.parametrize("model", sorted(MODELS))
def test_defaults_dict_is_the_spec(model):
    module_name, defaults_name, _ = MODELS[model]
    defaults = getattr(importlib.import_module(module_name), defaults_name)
    assert defaults == get_spec(model).defaults()


@pytest.mark.parametrize("model", sorted(MODELS))
def test_builder_keyword_defaults_are_the_spec(model):
    module_name, _, builder_name = MODELS[model]
    spec = get_spec(model)
    parameters = inspect.signature(
        getattr(importlib.import_module(module_name), builder_name)
    ).parameters
    # A hyper-parameter the builder does not take must feed a featuriser instead
    # (BERT + MatchLSTM's max_length).
    featuriser_options = repr(spec.features)
    for name, hparam in spec.hparams.items():
        if name not in parameters:
            assert f"hparam:{name}" in featuriser_options, (model, name)
            continue
        assert parameters[name].default == hparam.default, (model, name)


#: Models whose docstrings restate at least this many defaults as ``name=value`` (so the check
#: below cannot pass by finding none).
MIN_MENTIONS = {"re2": 0, "drcn": 3, "fitn": 5, "match_srnn": 4, "bert_matchlstm": 10}


@pytest.mark.parametrize("model", sorted(MODELS))
def test_docstring_defaults_match_the_spec(model):
    module_name, _, builder_name = MODELS[model]
    module = importlib.import_module(module_name)
    defaults = resolved_defaults(model)
    checked, wrong = 0, []
    for where, text in (
        ("module", module.__doc__),
        (builder_name, getattr(module, builder_name).__doc__),
    ):
        for name, value in mentions(text):
            assert name in defaults, (
                f"{model} {where}: ``{name}=...`` names no training setting or hyper-parameter"
            )
            checked += 1
            if value != defaults[name]:
                wrong.append(f"{where}: ``{name}={value!r}`` but the default is {defaults[name]!r}")
    assert not wrong, f"{model}: " + "; ".join(wrong)
    assert checked >= MIN_MENTIONS.get(model, 0)
