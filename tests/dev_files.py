"""Test helper: the (text1, text2) pairs of every staged dev file in ../shared/data."""

from re2_tf.data import readers


def real_dev_pairs(shared_data):
    """``{dataset: [(text1, text2), ...]}`` for SNLI, SciTail and Quora dev (RE2-processed),
    WikiQA dev and TrecQA clean-dev (1,117 pairs), in file order."""
    files = {
        name: readers.read_processed(shared_data / f"{name}/re2_processed/dev.txt")
        for name in ("snli", "scitail", "quora")
    }
    files["wikiqa"] = readers.read_wikiqa_txt(shared_data / "wikiqa/WikiQA-dev.txt")
    pairs = {name: [(ex.text1, ex.text2) for ex in examples] for name, examples in files.items()}
    trec = shared_data / "trecqa/clean-dev"
    questions = (trec / "a.toks").read_text(encoding="utf-8").splitlines()
    answers = (trec / "b.toks").read_text(encoding="utf-8").splitlines()
    assert len(questions) == len(answers) == 1117
    pairs["trecqa"] = list(zip(questions, answers))
    return pairs
