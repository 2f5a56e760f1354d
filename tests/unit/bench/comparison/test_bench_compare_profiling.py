"""Reading py-spy's raw (collapsed stacks) profiles for bench.compare --profile."""

from __future__ import annotations

from pathlib import Path

from bench.comparison.profiling import parse_raw, summary

RAW = """\
main (app.py:1);handle (api.py:10);dumps (json/encoder.py:200) 30
main (app.py:1);handle (api.py:10);validate (pydantic/main.py:5) 10
main (app.py:1);run_forever (asyncio/base_events.py:593);select (selectors.py:451) 500
worker (threading.py:900);wait (threading.py:320) 40
main (app.py:1);handle (api.py:10) 20
not a stack line
"""


def test_busy_samples_are_counted_by_function_file_and_stack() -> None:
    profile = parse_raw(RAW)

    assert (profile.samples, profile.idle) == (60, 540)  # waiting in select or on a lock: idle
    assert profile.by_function.most_common(1) == [("dumps (json/encoder.py:200)", 30)]
    assert profile.by_file["pydantic/main.py"] == 10
    assert profile.by_file["api.py"] == 20
    assert profile.inclusive["handle (api.py:10)"] == 60


def test_the_summary_ranks_each_process_and_skips_empty_profiles(tmp_path: Path) -> None:
    (tmp_path / "orchestrator.txt").write_text(RAW)
    (tmp_path / "grader.txt").write_text("")

    text = summary(tmp_path, top=2)

    assert "**orchestrator**: 60 busy samples" in text
    assert "540 idle ones left out" in text
    assert "| 50.0 | `dumps (json/encoder.py:200)` |" in text
    assert "grader" not in text
