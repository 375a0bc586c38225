"""The command-line layer (re2_tf.cli): importing it defines no flag, every console script
answers --help, a user's mistake is one line on stderr; the library works without matplotlib.

Each check runs in a fresh interpreter: flags and imported modules are per process, and
pytest's own process has imported other tests' modules.
"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import tomllib

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SCRIPTS = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
#: Modules of re2_tf.cli that are plumbing, not commands.
PLUMBING = {"common", "startup", "usage"}


def _python(code, timeout=300):
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _script(name, *args, timeout=300):
    return subprocess.run(
        [str(BIN / name), *args], cwd=REPO, capture_output=True, text=True, timeout=timeout
    )


IMPORT_ALL = """
    import importlib, json, pkgutil
    from absl import app, flags, logging   # absl's own flags
    import re2_tf, re2_tf.cli
    import tensorflow  # its own flags are not re2_tf's (import re2_tf imports no TensorFlow)

    before = set(flags.FLAGS)
    names = sorted(m.name for m in pkgutil.iter_modules(re2_tf.cli.__path__))
    modules = {name: importlib.import_module(f"re2_tf.cli.{name}") for name in names}
    by_module = flags.FLAGS.flags_by_module_dict()
    print(json.dumps({
        "modules": names,
        "new_flags": sorted(set(flags.FLAGS) - before),
        "flags_of_re2_tf_modules": sorted(k for k, v in by_module.items()
                                          if k.startswith("re2_tf") and v),
        "run_callable": {name: callable(getattr(m, "run", None)) for name, m in modules.items()},
    }))
"""


def test_importing_every_cli_module_defines_no_flag():
    proc = _python(IMPORT_ALL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    commands = set(report["modules"]) - PLUMBING
    expected = {
        "analyze",
        "benchmark",
        "evaluate",
        "export",
        "predict",
        "prepare",
    } | ({"train"} if (REPO / "re2_tf/cli/train.py").exists() else set())
    assert commands == expected
    assert report["new_flags"] == []
    assert report["flags_of_re2_tf_modules"] == []
    assert all(report["run_callable"][name] for name in commands), report["run_callable"]


def test_console_scripts_point_at_the_run_of_each_cli_module():
    assert set(SCRIPTS) == {
        "re2-train",
        "re2-evaluate",
        "re2-predict",
        "re2-export",
        "re2-bench",
        "re2-prepare",
        "re2-analyze",
    }
    for script, target in SCRIPTS.items():
        module, _, function = target.partition(":")
        assert module.startswith("re2_tf.cli.") and function == "run", script
        assert (REPO / (module.replace(".", "/") + ".py")).exists(), script


@pytest.mark.parametrize(
    "script",
    [s if s == "re2-train" else pytest.param(s, marks=pytest.mark.slow) for s in sorted(SCRIPTS)],
)
def test_console_script_help(script):
    proc = _script(script, "--help")
    assert proc.returncode == 0, proc.stderr[-2000:]
    module = SCRIPTS[script].partition(":")[0]
    assert proc.stdout.startswith(f"``{script}``"), proc.stdout[:300]  # its usage text
    assert "\nflags:\n  --" in proc.stdout and "--[no]verbose" in proc.stdout
    assert module.rsplit(".", 1)[1] in proc.stdout  # "python -m re2_tf.cli.<module>" line


def _one_error_line(proc, program):
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith(f"{program}: error: "), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    return lines[0]


def test_evaluate_missing_run_dir_is_one_line(tmp_path):
    line = _one_error_line(
        _script("re2-evaluate", f"--run_dir={tmp_path / 'no_run'}"), "re2-evaluate"
    )
    assert str(tmp_path / "no_run") in line


def test_export_missing_run_dir_is_one_line(tmp_path):
    line = _one_error_line(
        _script(
            "re2-export", f"--run_dir={tmp_path / 'no_run'}", f"--export_dir={tmp_path / 'export'}"
        ),
        "re2-export",
    )
    assert str(tmp_path / "no_run") in line
    assert not (tmp_path / "export").exists()


def test_predict_missing_export_or_input_is_one_line(tmp_path):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("a man\ta dog\n")
    line = _one_error_line(
        _script("re2-predict", f"--export_dir={tmp_path / 'no_export'}", f"--input={pairs}"),
        "re2-predict",
    )
    assert f"{tmp_path / 'no_export'} is not a re2_tf export" in line
    line = _one_error_line(
        _script("re2-predict", f"--export_dir={tmp_path}", f"--input={tmp_path / 'missing.tsv'}"),
        "re2-predict",
    )
    assert "No such file or directory" in line and "missing.tsv" in line


def test_verbose_shows_the_traceback(tmp_path):
    proc = _script("re2-predict", f"--export_dir={tmp_path}", "--input=missing.tsv", "--verbose")
    assert proc.returncode == 1 and "Traceback" in proc.stderr


WITHOUT_MATPLOTLIB = """
    import importlib, pkgutil, sys, tempfile
    sys.modules["matplotlib"] = None      # as if not installed: its import fails
    import re2_tf

    # Modules of another extra (bert, openvino, onnx) may be absent as the README installs
    # re2_tf: a module that needs one of them is passed over, never one that needs matplotlib.
    OTHER_EXTRAS = {"keras_hub", "tensorflow_text", "safetensors", "tokenizers", "openvino",
                    "onnxruntime", "tf2onnx", "onnx"}
    for module in pkgutil.walk_packages(re2_tf.__path__, "re2_tf."):
        try:
            importlib.import_module(module.name)
        except ModuleNotFoundError as error:
            if error.name.split(".")[0] not in OTHER_EXTRAS:
                raise
    from re2_tf.analysis import AttentionMaps, save_maps
    try:
        empty = AttentionMaps("toy", {}, {}, {}, {}, {}, {}, {})
        save_maps(empty, tempfile.mkdtemp(), plots=True)
    except ImportError as error:
        print(error)
    else:
        raise SystemExit("no error")
"""


def test_the_library_imports_without_matplotlib_and_the_figure_says_what_to_install():
    proc = _python(WITHOUT_MATPLOTLIB)
    assert proc.returncode == 0, proc.stderr[-3000:]
    message = proc.stdout.strip().splitlines()[-1]
    assert "matplotlib" in message and "pip install 're2_tf[plot]'" in message


@pytest.mark.parametrize(
    "argv, orig_argv, name",
    [
        (["/venv/bin/re2-train"], ["python", "/venv/bin/re2-train"], "train"),
        (["x.py"], ["python", "-m", "re2_tf.cli.predict", "--input=-"], "predict"),
        (["x.py"], ["python", "-m", "re2_tf.benchmark", "--batch=8"], "benchmark"),
        (["x.py"], ["python", "-m", "re2_lab.cli.sweep", "--grid=blocks=1"], None),
        (["x.py"], ["python", "-m", "re2_tf.train"], "train"),
        (["x.py"], ["python", "-m", "re2_tf.api"], None),
        (["x.py"], ["python", "-m", "other.cli.train"], None),
        (["x.py"], ["python", "x.py"], None),
    ],
)
def test_command_name_of_each_way_to_start_a_command(argv, orig_argv, name):
    from re2_tf.cli.startup import command_name

    assert command_name(argv, orig_argv) == name
