"""A workspace follows git only where git would: a `.git` file shares a repository's memory only when it is a
real worktree of that repository, one the repository names back. Real `git worktree add`, and forged files."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from codeoid.workspace import identify


def git(*args: str) -> None:
    subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", *args], check=True, capture_output=True)


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    """A repository with a secret-bearing history and one real worktree at tmp_path/wt."""
    main = tmp_path / "other-repo"
    git("init", "-q", str(main))
    git("-C", str(main), "commit", "-q", "--allow-empty", "-m", "init")
    git("-C", str(main), "worktree", "add", "-q", str(tmp_path / "wt"))
    return main


def test_a_real_worktree_shares_its_repository_workspace(repository: Path, tmp_path: Path) -> None:
    common = str((repository / ".git").resolve())
    assert identify(str(tmp_path / "wt")).key == common
    (tmp_path / "wt" / "deep" / "er").mkdir(parents=True)
    assert identify(str(tmp_path / "wt" / "deep" / "er")).key == common


def test_a_forged_gitdir_without_commondir_is_its_own_workspace(repository: Path, tmp_path: Path) -> None:
    forged = tmp_path / "forged"
    forged.mkdir()
    (forged / ".git").write_text(f"gitdir: {repository / '.git'}\n")

    found = identify(str(forged))

    assert found.key == str(forged.resolve()) and found.portable_id is None


def test_a_copied_worktree_pointer_is_not_named_back_and_stays_its_own_workspace(repository: Path,
                                                                                tmp_path: Path) -> None:
    # Pointing at a real worktree dir (it has a commondir) is not enough: that dir names the real worktree back.
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(tmp_path / "wt" / ".git", copy / ".git")

    assert identify(str(copy)).key == str(copy.resolve())


def test_a_forged_pointer_inside_a_repository_does_not_fall_through_to_it(repository: Path, tmp_path: Path) -> None:
    inner = repository / "vendor" / "thing"
    inner.mkdir(parents=True)
    (inner / ".git").write_text("gitdir: /nowhere/at/all\n")

    assert identify(str(inner)).key == str(inner.resolve())


def test_a_hand_made_worktree_dir_outside_the_repositorys_worktrees_is_refused(repository: Path,
                                                                              tmp_path: Path) -> None:
    # A fake "worktree dir" that names us back and claims the repository as its common dir, but that the
    # repository itself never made (it is not under <common>/worktrees/).
    fake = tmp_path / "fake-gitdir"
    fake.mkdir()
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / ".git").write_text(f"gitdir: {fake}\n")
    (fake / "gitdir").write_text(f"{victim / '.git'}\n")
    (fake / "commondir").write_text(f"{repository / '.git'}\n")

    assert identify(str(victim)).key == str(victim.resolve())
