"""Install re2_tf: `pip install -e .` (add `[test]` for pytest)."""
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
    extras_require={"test": ["pytest>=8,<10", "pytest-xdist>=3.5,<4"]},
)
