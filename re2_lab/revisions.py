"""Another revision of this repository beside the current checkout, for the lab's A/B records
that build one side at a git revision (``docs/runs/roofline/spatial_gru_ab.py``,
``docs/runs/training-profile/bilstm_ab.py``)."""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path

__all__ = ["checkout"]


@contextlib.contextmanager
def checkout(revision, where, repo):
    """Check ``revision`` of the git repository ``repo`` out into a detached worktree at
    ``where`` for the ``with`` block, and remove the worktree after it, whatever happens in
    the block.

    Args:
        revision: anything ``git worktree add`` takes (a commit, a branch, a tag).
        where: the worktree's directory (must not exist yet).
        repo: a directory inside the repository.

    Yields:
        ``Path`` of the worktree.

    Raises:
        subprocess.CalledProcessError: ``git worktree add`` failed (an unknown revision), with
        git's stderr.
    """
    where = Path(where)
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(where), revision],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    )
    try:
        yield where
    finally:
        subprocess.run(
            ["git", "worktree", "remove", "--force", str(where)], cwd=repo, capture_output=True
        )
