"""Source holds code, not results: no measured time, speed-up or machine note in the library's
docstrings and comments (they belong in docs/ beside their records). Figures the code
*computes* into a report (``f"... measured on {cpu}"``) are not notes, nor are the papers'
own figures (RE2's Table 5 seconds)."""

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "re2_tf"

#: Phrases of a measurement written into source: a core count, a before/after time, a
#: speed-up factor, "measured here/on", a time per core count.
MEASURED = re.compile(
    r"on \d+ (cpu )?cores|instead of \d+(\.\d+)? ?(s|ms)\b|\d(\.\d+)? ?(x|×|times) "
    r"(faster|slower|as long)|measured (here|on)\b(?! ?\{)|\d+ -> \d+ ms|went from \d+ to \d+",
    re.IGNORECASE,
)


def test_no_measured_figures_in_library_source():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if MEASURED.search(line) and 'f"' not in line and "f'" not in line:
                found.append(f"{path.relative_to(PACKAGE.parent)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_pattern_finds_the_notes_it_is_for():
    for note in (
        "scores it in 49 s instead of 151 s on 2 cores.)",
        "# (about 3x slower for a typical pair).",
        "the Keras backend took 1.24 times as long",
        "# 30 x 30 grid at batch 128 went from 929 to 310 ms forward + backward here)",
        "measured here, forward + backward",
        "231 -> 195 ms",
    ):
        assert MEASURED.search(note), note
