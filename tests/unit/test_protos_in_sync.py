"""The committed ragloop.v1 stubs are exactly what `make protos` generates from protos/."""

from __future__ import annotations

import filecmp
from pathlib import Path

from ragloop.core.protogen import generate, proto_files

COMMITTED = Path(__file__).resolve().parents[2] / "libs/core/src/ragloop/v1"


def test_committed_stubs_match_the_protos(tmp_path: Path) -> None:
    generate(tmp_path)
    generated = tmp_path / "ragloop" / "v1"
    names = sorted(p.name for p in generated.iterdir())
    assert len(names) == 3 * len(proto_files())
    committed = sorted(
        p.name for p in COMMITTED.iterdir() if p.name != "__init__.py" and p.is_file()
    )
    assert committed == names, "stub files differ from the protos: run `make protos`"
    _, mismatch, errors = filecmp.cmpfiles(generated, COMMITTED, names, shallow=False)
    assert not mismatch and not errors, f"stale stubs {mismatch}: run `make protos`"


def test_stubs_import_as_ragloop_v1_without_patching() -> None:
    from ragloop.v1 import grader_pb2_grpc, retriever_pb2

    assert retriever_pb2.DESCRIPTOR.package == "ragloop.v1"
    assert hasattr(grader_pb2_grpc, "GraderServiceStub")


def test_every_enum_starts_with_unspecified() -> None:
    from ragloop.v1 import common_pb2

    for enum in common_pb2.DESCRIPTOR.enum_types_by_name.values():
        assert enum.values[0].name.endswith("_UNSPECIFIED") and enum.values[0].number == 0
