import subprocess

import pytest

from re2_lab.revisions import checkout


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


def test_an_export_ab_script_measures_only_the_variants_it_knows(tmp_path, monkeypatch):
    from re2_lab.revisions import export_ab_main

    script = tmp_path / "docs" / "runs" / "roofline" / "x_ab.py"
    monkeypatch.setattr("sys.argv", ["x_ab.py", "--before=HEAD", "--variants=RE2 9 blocks"])
    with pytest.raises(ValueError, match=r"\['RE2 9 blocks'\] not among \['RE2 1 block'\]"):
        export_ab_main(script, [("re2", "RE2 1 block")])
    assert not script.with_suffix(".json").exists()
