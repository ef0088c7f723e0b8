"""The readers by format name (pipeline/sources/registry.py)."""

import pytest

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.sources import edgelist, metis, mtx, npz, ogb, planetoid, registry, saint


def test_every_format_once_in_the_order_the_cli_lists_them():
    assert registry.formats() == ("edgelist", "mtx", "metis", "npz", "planetoid", "ogb", "saint")
    assert [registry.get(f) for f in registry.formats()] == [edgelist.READER, mtx.READER, metis.READER, npz.READER,
                                                             planetoid.READER, ogb.READER, saint.READER]
    assert all(name == r.name for name, r in registry.READERS.items())


def test_an_unknown_format_names_the_known_ones():
    with pytest.raises(UserError) as e:
        registry.get("graphml")
    assert str(e.value) == "unknown format 'graphml'; known formats: edgelist, mtx, metis, npz, planetoid, ogb, saint"


def test_detect_uses_the_registered_claims(tmp_path):
    assert registry.detect(tmp_path / "x.mtx") == "mtx" and registry.detect(tmp_path / "ind.a.graph") == "planetoid"
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "role.json").write_text("{}")
    assert registry.detect(tmp_path / "s") == "saint"


def test_the_registry_imports_nothing_heavy():
    import subprocess
    import sys

    code = ("import sys\nimport shgcn.pipeline.sources.registry\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'scipy', 'pyarrow', 'dask', 'distributed'}))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == "[]", res.stderr  # --help lists the formats from here


def test_only_planetoid_names_its_files_and_every_reader_checks_a_path_before_a_build(tmp_path):
    assert [f for f, r in registry.READERS.items() if r.names_files] == ["planetoid"]
    for r in registry.READERS.values():  # a missing path is the reader's one line, before any worker
        with pytest.raises(UserError, match="missing"):
            r.precheck(str(tmp_path / "missing"), None)
