"""Generate the ``ragloop.v1`` Python stubs from ``protos/`` (``make protos``).

Generated with ``-I protos`` so that the stubs import each other as ``ragloop.v1.*`` with no
hand-patching. Tests regenerate into a temporary folder and compare, so drift is caught.
"""

from __future__ import annotations

import sys
from pathlib import Path

PROTO_ROOT = Path(__file__).resolve().parents[5] / "protos"


def proto_files(root: Path = PROTO_ROOT) -> list[Path]:
    return sorted((root / "ragloop" / "v1").glob("*.proto"))


def generate(out_dir: Path, root: Path = PROTO_ROOT) -> None:
    from grpc_tools import protoc  # dev dependency: only needed to regenerate

    include = Path(protoc.__file__).parent / "_proto"
    out_dir.mkdir(parents=True, exist_ok=True)
    args = [
        "protoc",
        f"-I{root}",
        f"-I{include}",
        f"--python_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        f"--pyi_out={out_dir}",
        *[str(p) for p in proto_files(root)],
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")


def main() -> None:
    generate(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("libs/core/src"))


if __name__ == "__main__":
    main()
