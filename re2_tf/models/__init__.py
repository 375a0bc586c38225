"""Model builders and their specs: one module per architecture, each registering one
:class:`~re2_tf.models.spec.ModelSpec` in :data:`MODEL_SPECS` (see :mod:`re2_tf.models.spec`)."""

# The order of these imports is the order of the registry (MODEL_SPECS, model_names()): the
# order every list of models shows them in.
# isort: off
from re2_tf.models.re2 import RE2_DEFAULTS, build_re2  # registers "re2"
from re2_tf.models.drcn import DRCN_DEFAULTS, build_drcn  # registers "drcn"
from re2_tf.models.fitn import FITN_DEFAULTS, build_fitn  # registers "fitn"
from re2_tf.models.match_srnn import MATCH_SRNN_DEFAULTS, build_match_srnn  # registers "match_srnn"
from re2_tf.models.bert_matchlstm import (  # registers "bert_matchlstm" (keras-hub on demand)
    BERT_MATCHLSTM_DEFAULTS,
    build_bert_matchlstm,
)

# isort: on
from re2_tf.models.spec import (
    MODEL_SPECS,
    HParam,
    ModelSpec,
    count_parameters,
    get_spec,
    model_names,
    register,
    registered,
    unregister,
)

__all__ = [
    "BERT_MATCHLSTM_DEFAULTS",
    "build_bert_matchlstm",
    "DRCN_DEFAULTS",
    "FITN_DEFAULTS",
    "MATCH_SRNN_DEFAULTS",
    "MODEL_SPECS",
    "HParam",
    "ModelSpec",
    "RE2_DEFAULTS",
    "build_drcn",
    "build_fitn",
    "build_match_srnn",
    "build_re2",
    "count_parameters",
    "get_spec",
    "model_names",
    "register",
    "registered",
    "unregister",
]
