import pytest

from deepcfr.atomic import atomic_path


def test_atomic_path_replaces_on_success(tmp_path):
    target = tmp_path / "sub" / "file.txt"
    with atomic_path(target) as tmp:
        assert tmp != target and tmp.parent == target.parent
        tmp.write_text("new")
    assert target.read_text() == "new"
    assert [p.name for p in target.parent.iterdir()] == ["file.txt"]


def test_atomic_path_failure_keeps_old_file_and_leaves_no_temp(tmp_path):
    target = tmp_path / "file.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("writer died")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["file.txt"]
