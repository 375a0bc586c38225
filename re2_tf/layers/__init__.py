"""Keras layers of re2_tf.

Generic pieces any architecture reuses: :class:`WeightNormDense`, :class:`WeightNormConv1D`,
:class:`PaddingMask`, :class:`MaskedMaxPooling`, :func:`masked_softmax`, :class:`Prediction`.
RE2's components, one module per paper component: encoder (:class:`ConvEncoder`), alignment
(:class:`Alignment`, Eq. 2-3), fusion (:class:`Fusion`, Eq. 4), connection
(:class:`AugmentedResidualConnection`, Eq. 1; :class:`ResidualConnection`), prediction
(:class:`Prediction`, Eq. 5-7). DRCN's components: character CNN (:class:`CharCNN`), masked
BiLSTM (:class:`MaskedBiLSTM`), cosine co-attention (:class:`CoAttention`, Eq. 5), autoencoder
bottleneck (:class:`Autoencoder`), interaction and prediction (:class:`InteractionPrediction`,
Eq. 7). FITN's components: memory-based attention (:class:`MemoryBasedAttention`, Eq. 4-9
and 18; :class:`BlockOutput`, Eq. 10-13) and the OA-mixed connection
(:class:`OAMixedConnection`, Eq. 14-15). Match-SRNN's: the neural tensor network
(:class:`NeuralTensorNetwork`, Sec. 4.1) and the spatial GRU (:class:`SpatialGRU`, Eq. 3-4,
scanned as a wavefront over anti-diagonals). BERT+MatchLSTM's: the split of BERT's packed
pair into its two texts (:class:`PairSegmentSplit`), the MatchLSTM (:class:`MatchLSTM`,
:class:`BidirectionalMatchLSTM`, Eq. 1-2) and the head variants' aggregations
(:class:`MaskedMeanPooling`, :class:`MultiWindowCNN`, Sec. 3.4).
"""

from re2_tf.layers.activations import gelu, get_activation
from re2_tf.layers.alignment import ALIGNMENTS, Alignment
from re2_tf.layers.autoencoder import Autoencoder
from re2_tf.layers.bert_heads import FirstTokenState, MaskedMeanPooling, MultiWindowCNN
from re2_tf.layers.char_cnn import CharCNN
from re2_tf.layers.co_attention import CoAttention, l2_normalize
from re2_tf.layers.connection import CONNECTIONS, AugmentedResidualConnection, ResidualConnection
from re2_tf.layers.encoder import ConvEncoder
from re2_tf.layers.fusion import FUSIONS, Fusion
from re2_tf.layers.interaction import InteractionPrediction, interaction_features
from re2_tf.layers.masking import PaddingMask, dtype_min, masked_softmax
from re2_tf.layers.match_lstm import BidirectionalMatchLSTM, MatchLSTM
from re2_tf.layers.memory_attention import (
    FITN_ACTIVATIONS,
    FITN_ATTENTIONS,
    BlockOutput,
    MemoryBasedAttention,
)
from re2_tf.layers.neural_tensor import NeuralTensorNetwork
from re2_tf.layers.oa_mixed import FITN_CONNECTIONS, OAMixedConnection
from re2_tf.layers.pooling import MaskedMaxPooling
from re2_tf.layers.prediction import PREDICTIONS, Prediction, pair_features
from re2_tf.layers.recurrent import MaskedBiLSTM
from re2_tf.layers.segment_split import PairSegmentSplit
from re2_tf.layers.spatial_gru import SpatialGRU, cell_by_cell_spatial_gru
from re2_tf.layers.weight_norm import WeightNormConv1D, WeightNormDense, weight_normalize

# BERT's backbone subclasses keras-hub's (the optional ``bert`` extra). Imported here when
# keras-hub is installed, so ``import re2_tf`` registers it with Keras and a saved
# BERT + MatchLSTM loads without ``custom_objects``; without keras-hub it is skipped.
try:
    from re2_tf.layers import bert_backbone as _bert_backbone  # noqa: F401
except ModuleNotFoundError as _error:
    if _error.name != "keras_hub":
        raise

__all__ = [
    "ALIGNMENTS",
    "CONNECTIONS",
    "FUSIONS",
    "PREDICTIONS",
    "Alignment",
    "AugmentedResidualConnection",
    "ConvEncoder",
    "Fusion",
    "MaskedMaxPooling",
    "PaddingMask",
    "Prediction",
    "ResidualConnection",
    "WeightNormConv1D",
    "WeightNormDense",
    "dtype_min",
    "gelu",
    "get_activation",
    "masked_softmax",
    "pair_features",
    "weight_normalize",
    "Autoencoder",
    "CharCNN",
    "CoAttention",
    "InteractionPrediction",
    "MaskedBiLSTM",
    "interaction_features",
    "l2_normalize",
    "FITN_ACTIVATIONS",
    "FITN_ATTENTIONS",
    "FITN_CONNECTIONS",
    "BlockOutput",
    "MemoryBasedAttention",
    "OAMixedConnection",
    "NeuralTensorNetwork",
    "SpatialGRU",
    "cell_by_cell_spatial_gru",
    "BidirectionalMatchLSTM",
    "FirstTokenState",
    "MaskedMeanPooling",
    "MatchLSTM",
    "MultiWindowCNN",
    "PairSegmentSplit",
]
