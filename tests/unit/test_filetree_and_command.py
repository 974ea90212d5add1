"""File-tree data generation and parsing, the command workload's settings, and plan checks for them."""

import hashlib
import json
import tarfile

import numpy as np
import pytest

from pickfs.errors import PlanError
from pickfs.model import Method, Target, WorkloadSpec
from pickfs.plan import build_plan, resolve_fs_name
from pickfs.workloads import treedata
from pickfs.workloads.command import Command, argv_of
from pickfs.workloads.filetree import BigFiles, SmallFiles, Tree


def spec(cls, **settings):
    return WorkloadSpec(cls.name, cls.name, tuple(sorted(cls.normalize(settings).items())))


def test_generated_sizes_follow_a_kernel_tree():
    sizes = treedata.tree_sizes(treedata.KERNEL_FILES, seed=1)
    assert len(sizes) == treedata.KERNEL_FILES
    assert 3_500 < np.median(sizes) < 6_000
    assert 0.9e9 < sizes.sum() < 1.6e9  # a Linux 6.x tree is ~1.2 GB
    assert (treedata.tree_sizes(100, seed=1) == treedata.tree_sizes(100, seed=1)).all()
    assert not (treedata.tree_sizes(100, seed=1) == treedata.tree_sizes(100, seed=2)).all()


def test_generated_layout_has_many_directories_of_bounded_depth():
    dirs = treedata.tree_layout(3000, seed=1)
    distinct = set(dirs)
    assert 120 < len(distinct) <= 3000 / treedata.KERNEL_FILES_PER_DIR + 1
    assert max(d.count("/") for d in distinct) <= 7


def test_a_generated_tarball_is_the_same_in_any_cache(tmp_path):
    a = treedata.generated_tree_tarball(tmp_path / "a", 60, seed=3)
    b = treedata.generated_tree_tarball(tmp_path / "b", 60, seed=3)
    with tarfile.open(a) as ta, tarfile.open(b) as tb:
        assert len([m for m in ta.getmembers() if m.isfile()]) == 60
        assert sorted(m.name for m in ta) == sorted(m.name for m in tb)
        name = next(m.name for m in ta if m.isfile())
        assert ta.extractfile(name).read() == tb.extractfile(name).read()
    again = treedata.generated_tree_tarball(tmp_path / "a", 60, seed=3)
    assert again == a and not list((tmp_path / "a").glob(".*partial"))


def test_random_files_are_reproducible_and_incompressible(tmp_path):
    d = treedata.random_files(tmp_path, "medium", 3, 10_000, 20_000, seed=5)
    files = sorted(d.iterdir())
    assert len(files) == 3 and all(10_000 <= f.stat().st_size <= 20_000 for f in files)
    again = treedata.random_files(tmp_path / "other", "medium", 3, 10_000, 20_000, seed=5)
    digest = lambda p: hashlib.sha256(p.read_bytes()).hexdigest()  # noqa: E731
    assert [digest(f) for f in files] == [digest(f) for f in sorted(again.iterdir())]
    import zlib
    data = files[0].read_bytes()
    assert len(zlib.compress(data)) > 0.95 * len(data)


def test_package_db_has_three_small_files_per_package(tmp_path):
    db = treedata.package_db(tmp_path, 20, seed=1)
    pkgs = sorted(db.iterdir())
    assert len(pkgs) == 20
    assert all(sorted(p.name for p in pkg.iterdir()) == ["desc", "files", "mtree"] for pkg in pkgs)


def test_filetree_parse_times_each_phase():
    raw = json.dumps({"client": "pickfs-filetree", "caches_dropped": True, "phases": [
        {"name": "copy_in", "elapsed_s": 1.5, "space_used_bytes": 100},
        {"name": "extract", "elapsed_s": 2.0, "space_used_bytes": 300},
        {"name": "delete", "elapsed_s": 0.5, "space_used_bytes": 10}]})
    m = Tree.parse(raw)
    assert m == {"copy_in_s": 1.5, "extract_s": 2.0, "delete_s": 0.5, "total_s": 4.0, "space_peak_bytes": 300}
    assert Tree.notes_from(raw) == []
    assert "not dropped" in Tree.notes_from(raw.replace('"caches_dropped": true', '"caches_dropped": false'))[0]


def test_filetree_settings():
    with pytest.raises(PlanError, match="reflink"):
        Tree.normalize({"reflink": "always"})
    with pytest.raises(PlanError, match="not a file"):
        Tree.normalize({"source": "/nonexistent.tar.xz"})
    with pytest.raises(PlanError, match="at least 1"):
        SmallFiles.normalize({"packages": 0})
    assert BigFiles.space_needed(spec(BigFiles, files=2, file_size="1G")) == 4 * 1024**3


def test_a_workload_larger_than_the_image_is_refused_with_the_size_to_use():
    target = Target(size_bytes=1024**3)
    with pytest.raises(PlanError, match=r"needs about 4.0 GiB") as exc:
        build_plan(target, [resolve_fs_name("ext4")], [spec(BigFiles, files=2, file_size="1G")], Method(), None)
    assert "--size 5G" in exc.value.hint


def test_raw_is_for_images_and_devices_only():
    raw = resolve_fs_name("raw")
    assert raw.fstype == "raw"
    with pytest.raises(PlanError, match="image or device target"):
        build_plan(Target(kind="directory"), [raw], [spec(Tree, source="generated")], Method(), None)


def test_command_settings_and_server_settings():
    s = Command.normalize({"command": "make test", "server": "postgresql", "fsync": "off"})
    assert s["fsync"] == "off" and s["timeout"] == 3600
    w = WorkloadSpec("command", "command", tuple(sorted(s.items())))
    assert Command.service_for(w) == "postgresql"
    assert Command.service_settings(w) == {"fsync": "off"}
    with pytest.raises(PlanError, match="needs the command"):
        Command.normalize({})
    with pytest.raises(PlanError, match="oracle"):
        Command.normalize({"command": "x", "server": "oracle"})
    with pytest.raises(PlanError, match="no setting fsync"):
        Command.normalize({"command": "x", "fsync": "off"})  # a server setting without a server
    assert argv_of("pytest -x && echo ok") == ["/bin/sh", "-c", "pytest -x && echo ok"]
    assert argv_of(["make", "test"]) == ["make", "test"]


def test_command_parse_refuses_a_failed_command():
    ok = {"client": "pickfs-command", "step": "command", "exit": 0, "elapsed_s": 2.5, "cpu_s": 1.0}
    assert Command.parse(json.dumps(ok)) == {"elapsed_s": 2.5, "cpu_s": 1.0}
    with pytest.raises(ValueError):
        Command.parse(json.dumps({**ok, "exit": 1}))


def test_a_compressed_tarball_is_decompressed_once_into_the_cache(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.c").write_text("int main(void) { return 0; }\n")
    tgz = tmp_path / "tree.tar.gz"
    with tarfile.open(tgz, "w:gz") as tf:
        tf.add(src, arcname="src")
    cache = tmp_path / "cache"
    out = treedata.decompressed_tarball(cache, tgz)
    assert out.parent.parent == cache and out.name == "source.tar"
    with tarfile.open(out) as tf:  # plain tar: the decompressor is not what a run measures
        assert "src/a.c" in tf.getnames()
    mtime = out.stat().st_mtime_ns
    assert treedata.decompressed_tarball(cache, tgz) == out and out.stat().st_mtime_ns == mtime
    plain = tmp_path / "plain.tar"
    plain.write_bytes(out.read_bytes())
    assert treedata.decompressed_tarball(cache, plain) == plain
    with pytest.raises(PlanError, match="does not exist"):
        treedata.decompressed_tarball(cache, tmp_path / "missing.tar.xz")
