"""re2_lab.figures: the papers' analysis figures.

RE2's occlusion (Figure 2) on a tiny 3-block RE2 with every weight random (biases, weight-norm
``g`` and temperatures too): the occluded part is exactly zero in that block's alignment and
fusion inputs, it is exactly the embedding / the summed block outputs / the encoder output of
the intact graph, and nothing else in that block's inputs or any earlier block's changes.
The committed figures' captions against their committed run records.
"""

import json
import re
from pathlib import Path

import keras
import numpy as np
import pytest
from model_scaffolding import pair_batch
from weights import randomize_weights

from re2_lab.figures import FIGURE_SETS
from re2_lab.figures.base import load_record, pair_overlap, run_caption
from re2_lab.figures.re2 import feature_slices, occluded_model, per_class_accuracy
from re2_tf.models.re2 import build_re2

REPO = Path(__file__).resolve().parents[2]
FIGURES = REPO / "docs" / "figures"
EMBED, HIDDEN = 6, 4


def tiny_re2(**kwargs):
    model = build_re2(
        30, 3, embedding_dim=EMBED, hidden_size=HIDDEN, blocks=3, enc_layers=1, **kwargs
    )
    randomize_weights(model, 3)
    return model


def block_inputs(model, blocks=3):
    """Per block ``(a, b, x_a, aligned_a, x_b, aligned_b)``: the alignment layer's two inputs
    and each fusion call's two inputs, from the graph ``model`` was built last with (its
    layers' newest call nodes)."""
    tensors = []
    for block in range(blocks):
        alignment = model.get_layer(f"block{block}_alignment")._inbound_nodes[-1]
        fusions = model.get_layer(f"block{block}_fusion")._inbound_nodes[-2:]
        # The clone may call fusion on text2 first: order the calls as the alignment's inputs.
        first = alignment.input_tensors[0]
        fusions = sorted(fusions, key=lambda n: n.input_tensors[0] is not first)
        assert fusions[1].input_tensors[0] is alignment.input_tensors[1]
        tensors += [*alignment.input_tensors[:2]]
        for node in fusions:
            tensors += [*node.input_tensors[:2]]
    values = [np.asarray(v) for v in keras.Model(model.input, tensors)(pair_batch(0))]
    return [values[6 * b : 6 * b + 6] for b in range(blocks)]


def intact_parts(model):
    """Per block the intact graph's embedding, residual (the connection's summed part) and
    encoder output of text1 and text2, read from those layers' own nodes."""
    embedding = model.get_layer("embedding")._inbound_nodes[:2]
    tensors = [node.outputs[0] for node in embedding]
    for block in range(3):
        tensors += [n.outputs[0] for n in model.get_layer(f"block{block}_encoder")._inbound_nodes]
        if block:
            tensors += [
                n.outputs[0] for n in model.get_layer(f"block{block}_connection")._inbound_nodes
            ]
    values = [np.asarray(v) for v in keras.Model(model.input, tensors)(pair_batch(0))]
    emb = values[:2]
    parts, k = [], 2
    for block in range(3):
        enc = values[k : k + 2]
        k += 2
        residual = None
        if block:
            residual = [v[..., EMBED:] for v in values[k : k + 2]]
            k += 2
        parts.append({"embed": emb, "residual": residual, "enc-out": enc})
    return parts


def test_the_parts_are_the_embedding_the_summed_outputs_and_the_encoder_output():
    model = tiny_re2()
    assert feature_slices(model, 0) == {"embed": (0, EMBED), "enc-out": (EMBED, EMBED + HIDDEN)}
    for block in (1, 2):
        assert feature_slices(model, block) == {
            "embed": (0, EMBED),
            "residual": (EMBED, EMBED + HIDDEN),
            "enc-out": (EMBED + HIDDEN, EMBED + 2 * HIDDEN),
        }
    inputs, parts = block_inputs(model), intact_parts(model)
    for block in range(3):
        a, b = inputs[block][:2]
        for feature, (start, stop) in feature_slices(model, block).items():
            for side, x in enumerate((a, b)):
                np.testing.assert_allclose(
                    x[..., start:stop], parts[block][feature][side], atol=1e-6
                )


def test_occlusion_zeroes_exactly_that_part_of_that_blocks_alignment_and_fusion_input():
    # The first block (no residual part) and the last (all three parts); block 1 is as block 2.
    model = tiny_re2()
    intact = block_inputs(model)
    logits = np.asarray(model(pair_batch(0)))
    for block, feature in [(0, f) for f in ("embed", "enc-out")] + [
        (2, f) for f in ("embed", "residual", "enc-out")
    ]:
        start, stop = feature_slices(model, block)[feature]
        occluded = occluded_model(model, block, feature)
        got = block_inputs(occluded)
        keep = np.ones(intact[block][0].shape[-1], bool)
        keep[start:stop] = False
        for earlier in range(block):  # blocks before: untouched
            for x, y in zip(got[earlier], intact[earlier]):
                np.testing.assert_allclose(x, y, atol=1e-6)
        a, b, x_a, aligned_a, x_b, aligned_b = got[block]
        for x, reference in ((a, intact[block][0]), (b, intact[block][1])):
            assert np.all(x[..., start:stop] == 0)
            np.testing.assert_allclose(x[..., keep], reference[..., keep], atol=1e-6)
            assert np.abs(reference[..., start:stop]).max() > 0.01  # it was not zero before
        # Fusion reads the same (occluded) features, and the aligned ones are weighted sums
        # of the other text's occluded features: that part is exactly zero too.
        np.testing.assert_array_equal(x_a, a)
        np.testing.assert_array_equal(x_b, b)
        assert np.all(aligned_a[..., start:stop] == 0) and np.all(aligned_b[..., start:stop] == 0)
        assert not np.allclose(np.asarray(occluded(pair_batch(0))), logits, atol=1e-4)
    np.testing.assert_array_equal(np.asarray(model(pair_batch(0))), logits)  # model unchanged


def test_occlusion_rejects_what_the_model_does_not_have():
    model = tiny_re2()
    with pytest.raises(ValueError, match="no 'residual' part"):
        occluded_model(model, 0, "residual")
    with pytest.raises(ValueError, match="feature must be"):
        occluded_model(model, 1, "alignment")
    with pytest.raises(ValueError, match="augmented residual"):
        feature_slices(tiny_re2(connection="residual"), 1)
    with pytest.raises(ValueError, match="enc_in=False"):
        feature_slices(tiny_re2(enc_in=False), 0)


def test_per_class_accuracy_is_the_recall_of_each_gold_class():
    labels = [0, 0, 1, 1, 1, 2]
    predictions = [0, 1, 1, 1, 0, 0]
    np.testing.assert_allclose(per_class_accuracy(labels, predictions, 4)[:3], [0.5, 2 / 3, 0])
    assert np.isnan(per_class_accuracy(labels, predictions, 4)[3])


# ------------------------------------------------------------------- committed figures
def committed(kind="run"):
    """The committed figures' JSONs drawn from one run (``"run"``) or from a sweep's records
    (``"cells"``)."""
    return sorted(p for p in FIGURES.glob("*.json") if kind in json.loads(p.read_text()))


def test_a_record_reads_as_its_files_say(tmp_path):
    (tmp_path / "results.json").write_text(
        json.dumps({"seed": 2, "splits": {"test": {"map": 0.61234, "mrr": 0.625}}})
    )
    (tmp_path / "flags.txt").write_text("--model=match_srnn\n--data_dir=/d\n--epochs=5\n")
    (tmp_path / "train.log").write_text("#classes 2; training on 8672\nepoch 1\n")
    record = load_record(tmp_path)
    assert (record.model, record.seed, record.epochs, record.training_pairs) == (
        "match_srnn",
        2,
        5,
        8672,
    )
    assert "5 passes over 8,672 training pairs; test MAP 0.6123, MRR 0.6250." in run_caption(record)
    (tmp_path / "train.log").write_text("8995 ranking triples; {}\ntraining on 8672\n")
    record = load_record(tmp_path)
    assert record.triples == 8995
    assert "over 8,995 ranking triples from 8,672 training pairs;" in run_caption(record)
    (tmp_path / "train.log").write_text(
        "training on 20360\n8995 ranking triples; {}\nmax_samples=101800: training stops after "
        "804 updates (11.32 of 5 passes of 71 updates over 8995 triples; 101,889 triples seen)\n"
    )
    record = load_record(tmp_path)
    assert (record.epochs, record.passes) == (5, 11.32)
    assert "5 passes" not in run_caption(record)
    assert "11.32 passes over 8,995 ranking triples from 20,360 training pairs;" in run_caption(
        record
    )


@pytest.mark.parametrize("path", committed(), ids=lambda p: p.stem)
def test_every_caption_number_is_its_committed_records(path):
    figure = json.loads(path.read_text())
    run = figure["run"]
    record = REPO / run["record"]
    results = json.loads((record / "results.json").read_text())
    flags = (record / "flags.txt").read_text().splitlines()
    log = (record / "train.log").read_text()
    epochs = next(int(f.split("=")[1]) for f in flags if f.startswith("--epochs="))
    # a run --max_samples cut short made the passes its log states, not --epochs
    stops = re.search(r"training stops after \d+ updates \(([\d.]+) of (\d+) passes", log)
    passes = stops.group(1) if stops else str(epochs)
    assert not stops or int(stops.group(2)) == epochs
    dataset = next(f.split("=", 1)[1] for f in flags if f.startswith("--dataset="))
    pairs = int(re.search(r"training on (\d+)", log).group(1))
    triples = re.search(r"(\d+) ranking triples", log)
    test = results["splits"]["test"]
    sentence = figure["caption"][figure["caption"].index("Run: ") :]
    expected = {
        str(results["seed"]),
        passes,
        f"{pairs:,}",
        *([f"{int(triples.group(1)):,}"] if triples else []),
        *(f"{test[k]:.4f}" for k in (("map", "mrr") if "map" in test else ("acc",))),
    }
    # The numbers in the run's sentence up to the note (which states the data's fixed facts).
    cited = sentence.split(". ", 1)[0].split("training pairs;", 1)
    numbers = set(re.findall(r"\d[\d,]*(?:\.\d+)?", cited[0].split("):", 1)[1] + cited[1]))
    numbers |= set(re.findall(r"seed (\d+)", sentence))
    assert numbers == expected, (numbers, expected)
    assert f"data {dataset}," in sentence and f"Run: {run['record']} " in sentence
    assert run["test"] == results["splits"]["test"] and run["epochs"] == epochs
    assert run["training_pairs"] == pairs and run["seed"] == results["seed"]
    assert run.get("triples") == (int(triples.group(1)) if triples else None)
    assert (FIGURES / f"{path.stem}.png").exists()
    docs = {p.name: p.read_text() for p in (REPO / "docs").glob("*.md")}
    shown = [name for name, text in docs.items() if f"figures/{path.stem}.png" in text]
    assert shown, f"{path.stem}.png is in no docs/<model>.md"
    assert all(figure["caption"] in docs[name] for name in shown)


def test_every_figure_set_names_its_runs_and_their_commands():
    keys = [run.key for s in FIGURE_SETS.values() for run in s.runs]
    assert len(keys) == len(set(keys)) and {"re2", "drcn", "match_srnn"} <= set(FIGURE_SETS)
    for figure_set in FIGURE_SETS.values():
        for run in figure_set.runs:
            assert run.record.startswith("docs/runs/") and run.command.startswith("python -m")


def test_a_missing_run_is_reported_with_its_command_and_nothing_is_written(tmp_path):
    from re2_lab.figures import paper_figures

    runs = {
        run.key: (str(tmp_path / run.key), str(tmp_path / "no-record"))
        for figure_set in FIGURE_SETS.values()
        for run in figure_set.runs
    }
    sweeps = {
        sweep.key: str(tmp_path / "no-records")
        for figure_set in FIGURE_SETS.values()
        for sweep in figure_set.sweeps
    }
    assert sweeps, "FITN Figure 4 is drawn from a sweep's records"
    figures, missing = paper_figures(tmp_path / "out", runs, sweeps=sweeps)
    assert figures == [] and not (tmp_path / "out").exists()
    by_key = {run.key: run for s in FIGURE_SETS.values() for run in s.runs}
    by_sweep = {sweep.key: sweep for s in FIGURE_SETS.values() for sweep in s.sweeps}
    # one per run (RE2's two figures share one) and one per sweep
    assert len(missing) == len(by_key) + len(by_sweep)
    for key, run in by_key.items():
        (message,) = [m for m in missing if f"run {key!r} missing" in m]
        assert str(tmp_path / key) in message and message.endswith(run.command)
    for key, sweep in by_sweep.items():
        (message,) = [m for m in missing if f"sweep {key!r} has no records" in m]
        assert str(tmp_path / "no-records") in message and message.endswith(sweep.command)


# ------------------------------------------------------------------- FITN Figure 4
def write_run(directory, seed, dev, test, rounds, pairs=10000, epochs=5):
    directory.mkdir(parents=True)
    results = {
        "seed": seed,
        "best_step": 40,
        "splits": {"dev": {"acc": dev}, "test": {"acc": test}},
    }
    (directory / "results.json").write_text(json.dumps(results))
    (directory / "flags.txt").write_text(
        f"--model=fitn\n--dataset=quora\n--data_dir=/q\n--epochs={epochs}\n--rounds={rounds}\n"
    )
    (directory / "train.log").write_text(f"#classes 2; training on {pairs}\n")


def test_fitn_figure4_is_the_mean_and_sample_std_of_its_records(tmp_path):
    pytest.importorskip("matplotlib")
    from re2_lab.figures.fitn import figure4

    records = tmp_path / "records"
    write_run(records / "rounds-1" / "seed1", 1, 0.60, 0.61, 1)
    write_run(records / "rounds-1" / "seed3", 3, 0.64, 0.67, 1)
    write_run(records / "rounds-4" / "seed2", 2, 0.70, 0.71, 4)
    write_run(records / "rounds-9" / "seed1", 1, 0.99, 0.99, 9)  # not a cell of the grid
    figure = figure4(records, tmp_path / "out", root=REPO)
    data = json.loads(figure.json.read_text())
    assert [c["rounds"] for c in data["cells"]] == [1, 4]
    one, four = data["cells"]
    assert one["seeds"] == [1, 3] and four["seeds"] == [2]
    # by hand: mean (0.61 + 0.67) / 2 = 0.64; sample std |0.67 - 0.61| / sqrt(2) = 0.042426
    assert one["test"]["mean"] == pytest.approx(0.64)
    assert one["test"]["std"] == pytest.approx(0.06 / 2**0.5)
    assert one["dev"]["mean"] == pytest.approx(0.62)
    assert one["dev"]["std"] == pytest.approx(0.04 / 2**0.5)
    assert four["test"] == {"mean": 0.71, "std": None, "values": [0.71]}
    assert "1: 0.6400 ± 0.0424 (2 seeds); 4: 0.7100 (1 seed)." in figure.caption
    assert "Rounds 2, 3, 5: no record yet." in figure.caption
    assert "each 5 passes over 10,000 training pairs." in figure.caption
    assert [r["seed"] for r in data["runs"]] == [1, 3, 2] and figure.png.stat().st_size > 0
    from matplotlib import image as mpimg

    image = mpimg.imread(figure.png)
    assert image.shape[0] > 300 and image.shape[1] > 500


def test_fitn_figure4_refuses_records_of_different_budgets(tmp_path):
    pytest.importorskip("matplotlib")
    from re2_lab.figures.fitn import figure4

    records = tmp_path / "records"
    write_run(records / "rounds-1" / "seed1", 1, 0.60, 0.61, 1)
    write_run(records / "rounds-2" / "seed1", 1, 0.60, 0.61, 2, epochs=3)
    with pytest.raises(ValueError, match="differ in data or budget"):
        figure4(records, tmp_path / "out", root=REPO)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("path", committed("cells"), ids=lambda p: p.stem)
def test_every_sweep_figure_is_its_committed_records(path):
    figure = json.loads(path.read_text())
    for cell in figure["cells"]:
        results = [json.loads((REPO / r / "results.json").read_text()) for r in cell["records"]]
        for split in ("dev", "test"):
            values = [r["splits"][split]["acc"] for r in results]
            assert cell[split]["values"] == values
            assert cell[split]["mean"] == pytest.approx(np.mean(values))
            if len(values) > 1:
                assert cell[split]["std"] == pytest.approx(np.std(values, ddof=1))
        held_out = np.mean([r["splits"]["test"]["acc"] for r in results])
        assert f"{cell['rounds']}: {held_out:.4f}" in figure["caption"]
    docs = {p.name: p.read_text() for p in (REPO / "docs").glob("*.md")}
    shown = [name for name, text in docs.items() if f"figures/{path.stem}.png" in text]
    assert shown and all(figure["caption"] in docs[name] for name in shown)


def test_the_occlusion_table_in_docs_is_the_figures_data():
    data = json.loads((FIGURES / "re2_figure2_occlusion.json").read_text())
    page = (REPO / "docs" / "re2.md").read_text()
    rows = re.findall(r"^\| (\d) \| (embed|residual|enc-out) \| (.+) \|$", page, re.M)
    assert len(rows) == 3 * len(data["changes"])
    for block, feature, values in rows:
        cells = [c.strip() for c in values.split("|")]
        if feature not in data["changes"][block]:
            assert cells == ["—"] * 3
            continue
        assert cells == [f"{x:+.2f}" for x in data["changes"][block][feature]]


def test_the_exact_match_chain_counts_content_words_in_order():
    from re2_lab.figures.match_srnn import choose_pair, content_lcs

    question = "how to get rid of memory stick error of my sony cyber shot ?".split()
    answer = (
        "you might want to try to format the memory stick but what is the error message".split()
    )
    chain = content_lcs(question, answer)
    assert [question[i] for i, _ in chain] == ["memory", "stick", "error"]  # not to / of / the
    assert all(question[i] == answer[j] for i, j in chain)
    assert [j for _, j in chain] == sorted(j for _, j in chain)
    assert content_lcs("b a".split(), "a b".split()) == []  # 1-letter words do not count
    assert len(content_lcs("stick memory".split(), "memory stick".split())) == 1

    from re2_tf.data.readers import PairExample

    examples = [
        PairExample(" ".join(question), " ".join(answer), 0, "q1", "d1"),  # wrong answer
        PairExample("who wrote tree grows", "tree grows was written by smith", 1, "q2", "d1"),
        PairExample("who wrote tree grows", "smith wrote tree grows , a novel", 1, "q2", "d2"),
        PairExample("who wrote tree grows", "smith wrote tree grows", 1, "q2", "d3"),
    ]
    example, chain = choose_pair(examples)
    assert example.docid == "d3" and len(chain) == 3  # longest chain, then the shortest answer
    with pytest.raises(ValueError, match="exact-match chain"):
        choose_pair(examples[:1])


def test_pair_overlap_by_hand():
    # words {a, man, sleeps} vs {a, man, rests}: 2 of 4; {a, dog} vs {a, dog}: 1 -> mean 0.75
    assert pair_overlap(("A man sleeps.", "a dog"), ("a man rests", "A dog!")) == 0.75
    assert pair_overlap(("", "x"), ("", "y")) == 0.0


def _held_out_pairs(figure):
    """(the paper's example, the figure's held-out pair as its JSON records it) per example."""
    if "pair" in figure:
        yield figure["pair"]
    for example in figure.get("examples", {}).values():
        if "pair" in example:
            yield example["pair"]


HELD_OUT_FIGURES = [
    p for p in committed() if list(_held_out_pairs(json.loads(p.read_text(encoding="utf-8"))))
]


def test_re2_figure3_and_the_drcn_figures_are_drawn_on_held_out_pairs():
    names = {p.stem for p in HELD_OUT_FIGURES}
    assert {"re2_figure3_case", "drcn_attention", "drcn_residual_attention"} <= names


@pytest.mark.parametrize("path", HELD_OUT_FIGURES, ids=lambda p: p.stem)
def test_a_held_out_figure_pair_is_the_held_out_half_nearest_the_papers(path, shared_data):
    """Each pair a figure is drawn on, against SNLI itself: it is line 4,912 + L of SNLI test
    (the learning check's held-out half starts after the first n // 2 = 4,912 lines), with
    the gold label the JSON names; the paper's example is in SNLI dev (the learning check's
    training file) and the pair is not; and no held-out pair of that label shares more words
    with the paper's example (the overlap recomputed here)."""
    snli = shared_data / "snli" / "re2_processed"
    test = snli.joinpath("test.txt").read_text(encoding="utf-8").splitlines()
    dev = snli.joinpath("dev.txt").read_text(encoding="utf-8").splitlines()
    half = len(test) // 2
    assert half == 4912
    names = ("entailment", "neutral", "contradiction")  # SNLI's label ids 0, 1, 2
    figure = json.loads(path.read_text(encoding="utf-8"))
    assert "held-out pair" in figure["caption"] and "second half of SNLI test" in figure["caption"]
    trained = {tuple(line.split("\t")[:2]) for line in dev}
    for pair in _held_out_pairs(figure):
        text1, text2, label = test[half + pair["line"] - 1].split("\t")
        assert (text1, text2, names[int(label)]) == (pair["text1"], pair["text2"], pair["label"])
        assert (text1, text2) not in trained
        paper = tuple(pair["paper"])
        assert any(paper[0].lower().rstrip(".") in line.lower() for line in dev)

        def words(text):
            return set(re.findall(r"[a-z0-9]+", text.lower()))

        def overlap(a, b):
            return np.mean(
                [len(words(x) & words(y)) / len(words(x) | words(y)) for x, y in zip(a, b)]
            )

        same = [
            line.split("\t")
            for line in test[half:]
            if names[int(line.split("\t")[2])] == pair["label"]
        ]
        best = max(overlap((t1, t2), paper) for t1, t2, _ in same)
        assert (
            overlap((text1, text2), paper) == pytest.approx(best) == pytest.approx(pair["overlap"])
        )
        assert (
            f'"{text1}" / "{text2}" (gold {pair["label"]}; line {pair["line"]:,} '
            in figure["caption"]
        )


def test_re2_figure3_reading_is_its_json():
    """docs/re2.md's sentences on Figure 3, recomputed from its JSON: the largest distance of a
    weight from the uniform 1/n per block, the words whose largest weight falls on the same
    word, and the prediction."""
    figure = json.loads((FIGURES / "re2_figure3_case.json").read_text(encoding="utf-8"))
    text = " ".join((REPO / "docs" / "re2.md").read_text(encoding="utf-8").split())
    premise, hypothesis = figure["premise"], figure["hypothesis"]
    n = len(hypothesis)
    bounds = []
    same = None
    for name in ("block1_over_hypothesis", "block3_over_hypothesis"):
        weights = np.array(figure["maps"][name])
        bounds.append(np.abs(weights - 1 / n).max())
        words = {w for i, w in enumerate(premise) if hypothesis[weights[i].argmax()] == w}
        same = words if same is None else same & words
    assert (
        f"no weight is further than {bounds[0]:.4f} from 1/{n} in block 1, {bounds[1]:.4f} in "
        "block 3 (rounded)"
    ) in text
    assert same == {"girl", "her", "bike"}
    assert "the largest weights of *girl*, *her* and *bike* fall on the same word" in text
    prediction = figure["prediction"]
    assert prediction["label"] == figure["pair"]["label"] == "neutral"
    assert f"gold label, neutral ({prediction['probabilities']['neutral']:.3f})" in text


def _layer_maxima(example):
    """(layer, largest weight, premise word, hypothesis word) per layer of a DRCN example."""
    out = []
    for layer in sorted(example["alpha"], key=lambda name: int(name[len("layer") :])):
        weights = np.array(example["alpha"][layer])
        i, j = np.unravel_index(weights.argmax(), weights.shape)
        out.append((layer, weights.max(), example["premise"][i], example["hypothesis"][j]))
    return out


def _rate(example, side):
    """(largest max-pool rate, its word) of one side of a DRCN example."""
    rates = example[f"max_pool_rate_{side}"]
    k = int(np.argmax(rates))
    return rates[k], example[side][k]


def test_the_drcn_attention_reading_is_its_json():
    """docs/drcn.md's sentences on the two attention figures, recomputed from their JSONs: how
    many layer maps join identical words and the exception, the first and last layer's largest
    weight against uniform, the largest max-pool rates and their words, the predictions and
    the two runs' test accuracy."""
    text = " ".join((REPO / "docs" / "drcn.md").read_text(encoding="utf-8").split())
    dense = json.loads((FIGURES / "drcn_attention.json").read_text(encoding="utf-8"))
    residual = json.loads((FIGURES / "drcn_residual_attention.json").read_text(encoding="utf-8"))
    for figure, expected_same in ((dense, 9), (residual, 10)):
        maxima = [m for e in figure["examples"].values() for m in _layer_maxima(e)]
        assert len(maxima) == 10
        assert sum(a == b for _, _, a, b in maxima) == expected_same
        for example in figure["examples"].values():
            assert example["prediction"]["label"] == example["pair"]["label"]
    assert "in 9 of its 10 layer maps the largest weight joins a word to the same word" in text
    assert "joins identical words in all 10 of its layer maps" in text
    entailment = dense["examples"]["entailment"]
    (odd,) = [m for m in _layer_maxima(entailment) if m[2] != m[3]]
    assert odd[0] == "layer4" and f"layer 4 of the entailment pair (*{odd[2]}*-*{odd[3]}*)" in text
    first, *_, last = _layer_maxima(entailment)
    uniform = 1 / len(entailment["hypothesis"])
    assert (
        f"the largest is {first[1]:.3f} in layer 1 and {last[1]:.3f} in layer 5, against a "
        f"uniform {uniform:.3f}"
    ) in text
    contradiction = dense["examples"]["contradiction"]
    premise, hypothesis = _rate(contradiction, "premise"), _rate(contradiction, "hypothesis")
    assert (
        f"{premise[0]:.2f} of the contradiction premise's features on *{premise[1]}* and "
        f"{hypothesis[0]:.2f} of its hypothesis's on *{hypothesis[1]}*"
    ) in text
    first_word = _rate(entailment, "hypothesis")
    assert first_word[1] == entailment["hypothesis"][0]
    assert (
        f"{first_word[0]:.2f} of the hypothesis's go to its first word, *{first_word[1]}*" in text
    )
    r_contradiction = residual["examples"]["contradiction"]
    r_premise, r_hypothesis = (
        _rate(r_contradiction, "premise"),
        _rate(r_contradiction, "hypothesis"),
    )
    assert (r_premise[1], r_hypothesis[1]) == (premise[1], hypothesis[1])
    assert f"pools most on *four* and *one* ({r_premise[0]:.2f} and {r_hypothesis[0]:.2f})" in text
    assert (
        f"test acc {residual['run']['test']['acc']:.4f} against DRCN's "
        f"{dense['run']['test']['acc']:.4f}"
    ) in text
