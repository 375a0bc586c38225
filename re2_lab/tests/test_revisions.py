import json
import subprocess
from pathlib import Path

import pytest

from re2_lab.revisions import checkout, commit, paired_sides


def _git(repo, *args):
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def test_a_revision_is_checked_out_beside_and_removed_after_even_on_error(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "f.txt").write_text("old\n")
    _git(repo, "add", "f.txt")
    _git(repo, "commit", "-qm", "one")
    first = _git(repo, "rev-parse", "HEAD")
    (repo / "f.txt").write_text("new\n")
    _git(repo, "commit", "-qam", "two")
    with checkout(first, tmp_path / "old", repo) as old:
        assert (old / "f.txt").read_text() == "old\n"
        assert (repo / "f.txt").read_text() == "new\n"
    assert not (tmp_path / "old").exists()
    assert "old" not in _git(repo, "worktree", "list")
    with pytest.raises(RuntimeError, match="in the block"):
        with checkout(first, tmp_path / "again", repo):
            raise RuntimeError("in the block")
    assert not (tmp_path / "again").exists()
    with pytest.raises(subprocess.CalledProcessError):
        with checkout("no-such-revision", tmp_path / "none", repo):
            pass


def test_a_side_is_named_by_its_commit_and_a_changed_library_tree_is_said(tmp_path):
    repo = tmp_path / "repo"
    (repo / "re2_tf").mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "re2_tf" / "m.py").write_text("x = 1\n")
    (repo / "notes.txt").write_text("a\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "one")
    first = _git(repo, "rev-parse", "HEAD")
    assert commit(repo) == first and len(first) == 40
    assert commit(repo, short=True) == _git(repo, "rev-parse", "--short", "HEAD")
    (repo / "notes.txt").write_text("b\n")  # outside the library: the commit still says it
    assert commit(repo) == first
    (repo / "re2_tf" / "m.py").write_text("x = 2\n")
    assert commit(repo) == first + " + working tree"
    assert commit(repo, "HEAD") == first  # a named revision is the commit alone
    _git(repo, "commit", "-qam", "two")
    assert commit(repo, "HEAD^") == first != commit(repo)
    with pytest.raises(subprocess.CalledProcessError):
        commit(repo, "no-such-revision")


def test_an_export_ab_script_measures_only_the_variants_it_knows(tmp_path, monkeypatch):
    from re2_lab.revisions import export_ab_main

    script = tmp_path / "docs" / "runs" / "roofline" / "x_ab.py"
    monkeypatch.setattr("sys.argv", ["x_ab.py", "--before=HEAD", "--variants=RE2 9 blocks"])
    with pytest.raises(ValueError, match=r"\['RE2 9 blocks'\] not among \['RE2 1 block'\]"):
        export_ab_main(script, [("re2", "RE2 1 block")])
    assert not script.with_suffix(".json").exists()


@pytest.mark.slow
def test_an_export_ab_side_converts_for_openvino_when_asked(tmp_path):
    """A side of export_ab made by this checkout: the ONNX and OpenVINO files it names are
    the converted --xla=false export (ONNX Runtime's model and OpenVINO's IR, each giving the
    SavedModel's probabilities on the same ids), and asking for no OpenVINO adds no
    OpenVINO path."""
    import numpy as np

    pytest.importorskip("openvino")
    pytest.importorskip("onnxruntime")
    from re2_lab.revisions import _exports
    from re2_tf.serving import runtimes

    repo = Path(__file__).resolve().parents[2]
    plain = _exports(repo, tmp_path / "a", "match_srnn", "Match-SRNN")
    assert set(plain) == {"XLA", "xla=False", "onnxruntime"}
    paths = _exports(repo, tmp_path / "b", "match_srnn", "Match-SRNN", ("f32",))
    assert set(paths) == {"XLA", "xla=False", "onnxruntime", "openvino f32"}
    both = _exports(repo, tmp_path / "c", "match_srnn", "Match-SRNN", bf16=True, bf16_xla=True)
    assert set(both) == {"XLA", "xla=False", "onnxruntime", "bf16 xla=False", "bf16 XLA"}
    for name, xla in (("bf16 xla=False", False), ("bf16 XLA", True)):
        config = json.loads((both[name][0] / "assets" / "export_config.json").read_text())
        assert (config["precision"], config["xla"]) == ("bf16", xla), name
    (onnx, none), (xml, precision) = paths["onnxruntime"], paths["openvino f32"]
    assert none is None and precision == "f32"
    assert onnx.suffix == ".onnx" and xml.suffix == ".xml"
    rng = np.random.default_rng(0)
    ids = {
        "text1": rng.integers(1, 100, (4, 9)).astype(np.int32),
        "text2": rng.integers(1, 100, (4, 6)).astype(np.int32),
    }
    saved = runtimes.load(paths["xla=False"][0], "savedmodel")
    expected = saved(ids)["probabilities"]
    for backend, path in (("onnxruntime", onnx), ("openvino", xml)):
        runtime = runtimes.load(paths["xla=False"][0], backend, cache_dir=path.parent)
        assert runtime.path == path  # the file the side named, not a new conversion
        np.testing.assert_allclose(runtime(ids)["probabilities"], expected, atol=1e-4)


@pytest.mark.slow
def test_paths_ab_times_profiles_and_compares_each_path_with_its_environment_and_request(tmp_path):
    """A real A/B on Match-SRNN at one small shape: the default export twice, once in
    processes whose XLA_FLAGS name a flag XLA does not know, then with a request naming an
    inputs file that does not exist, then with requests of intra-op and of inter-op threads
    TensorFlow refuses, each of which must fail the workers (so environments and requests
    reach them), then twice plainly; identical paths agree exactly."""
    from re2_lab.revisions import paths_ab

    def paths(xla, plain, onnx, work):
        assert Path(plain).is_dir() and Path(onnx).suffix == ".onnx"
        return {"default": (xla, None), "again": (xla, None), "onnxruntime": (onnx, None)}

    common = dict(rounds=1, reference="default", shapes=((2, 5, 2),))
    out = tmp_path / "record.json"
    with pytest.raises(RuntimeError, match="no_such_xla_flag"):
        broken = {"again": {"XLA_FLAGS": "--no_such_xla_flag=1"}}
        paths_ab("docs/runs/x.py", {}, [("match_srnn", "Match-SRNN")], paths, out=out,
                 environments=broken, **common)  # fmt: skip
    with pytest.raises(RuntimeError, match="no_such_inputs.npz"):
        broken = {"again": {"inputs_file": str(tmp_path / "no_such_inputs.npz")}}
        paths_ab("docs/runs/x.py", {}, [("match_srnn", "Match-SRNN")], paths, out=out,
                 requests=broken, **common)  # fmt: skip
    # a path's own intra-op threads reach its timing process (TensorFlow refuses a string)
    with pytest.raises(RuntimeError, match="'str' object cannot be interpreted as an integer"):
        broken = {"again": {"intra_op_threads": "two"}}
        paths_ab("docs/runs/x.py", {}, [("match_srnn", "Match-SRNN")], paths, out=out,
                 requests=broken, **common)  # fmt: skip
    # and so do its inter-op threads (a key of the request, not of the timing options)
    with pytest.raises(RuntimeError, match="'str' object cannot be interpreted as an integer"):
        broken = {"again": {"inter_op_threads": "two"}}
        paths_ab("docs/runs/x.py", {}, [("match_srnn", "Match-SRNN")], paths, out=out,
                 requests=broken, **common)  # fmt: skip
    record = paths_ab(
        "docs/runs/x.py", {"rounds": "1"}, [("match_srnn", "Match-SRNN")], paths, out=out,
        unscored=("onnxruntime",), note="n", **common,
    )  # fmt: skip
    assert json.loads(out.read_text()) == record and record["note"] == "n"
    assert list(record)[-4:] == ["note", "variants", "agreement", "profiles"]
    assert "environment" not in record and "request" not in record
    times = record["variants"]["Match-SRNN"]
    assert set(times) == {"default@2", "again@2", "onnxruntime@2"}
    assert all(len(v) == 1 and v[0] > 0 for v in times.values())
    agreement = record["agreement"]["Match-SRNN"]
    assert set(agreement) == {"default@2", "again@2"}
    assert agreement["again@2"] == {"max_abs_dp": 0.0, "argmax_agreement": 1.0}
    assert set(record["profiles"]["Match-SRNN"]) == {"default@2", "again@2"}


def test_a_paths_ab_script_reads_its_variants_and_writes_nothing_for_an_unknown_model(
    tmp_path, monkeypatch
):
    from re2_lab.revisions import paths_ab_main

    script = tmp_path / "docs" / "runs" / "roofline" / "x_ab.py"
    monkeypatch.setattr("sys.argv", ["x_ab.py", "--rounds=2", "--variants=nosuch:Nothing"])
    with pytest.raises(KeyError, match="unknown model 'nosuch'"):
        paths_ab_main(script, "re2:RE2 1 block", lambda *a: {}, reference="default")
    assert not script.with_suffix(".json").exists()


def test_each_paths_two_sides_are_timed_back_to_back():
    sides = {
        "before": {"XLA": "b/xla", "openvino f32": "b/ov"},
        "after": {"XLA": "a/xla", "bf16": "a/bf16", "openvino f32": "a/ov"},
    }
    assert list(paired_sides(sides).items()) == [
        ("before XLA", "b/xla"),
        ("after XLA", "a/xla"),
        ("before openvino f32", "b/ov"),
        ("after openvino f32", "a/ov"),
        ("after bf16", "a/bf16"),
    ]


def test_saved_model_sizes_are_the_graph_file_and_every_variables_file(tmp_path):
    from re2_lab.revisions import saved_model_sizes

    (tmp_path / "variables" / "nested").mkdir(parents=True)
    (tmp_path / "saved_model.pb").write_bytes(b"x" * 1234)
    (tmp_path / "variables" / "variables.index").write_bytes(b"i" * 56)
    (tmp_path / "variables" / "variables.data-00000-of-00001").write_bytes(b"d" * 7000)
    (tmp_path / "variables" / "nested" / "more").write_bytes(b"m" * 9)
    (tmp_path / "fingerprint.pb").write_bytes(b"f" * 100)  # neither the graph nor a variable
    assert saved_model_sizes(tmp_path) == {"saved_model.pb": 1234, "variables": 56 + 7000 + 9}
