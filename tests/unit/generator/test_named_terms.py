"""The names an answer gives that no passage gives: flags, settings, paths and code, not prose."""

from __future__ import annotations

from ragloop.generator.named_terms import names_in, unfound_names

PASSAGES = [
    "Pass --web.config.file to enable basic_auth_users. The config lives in prometheus.yml.",
    "Remote write sends samples to /api/v1/write.",
]


def test_flags_settings_paths_and_code_spans_are_names_and_prose_is_not() -> None:
    answer = (
        "Use the `--web.config.file` flag with basic_auth_users in prometheus.yml [1], "
        "send to /api/v1/write, set `includeSubDomains` and `status`, e.g. as shown. [2]"
    )
    assert names_in(answer) == {
        "--web.config.file",
        "basic_auth_users",
        "prometheus.yml",
        "/api/v1/write",
        "includeSubDomains",
        "status",
    }


def test_an_expression_in_code_is_checked_by_the_names_inside_it() -> None:
    assert names_in("Alert on `rate(http_requests_total[5m]) > 0`.") == {"http_requests_total"}


def test_names_the_passages_give_are_found_whatever_their_case() -> None:
    answer = "Set `--Web.Config.File` and basic_auth_users; remote write goes to /api/v1/write."
    assert unfound_names(answer, PASSAGES) == []


def test_a_name_no_passage_gives_is_unfound_even_when_the_question_gives_it() -> None:
    # The question asks about a flag the passages never mention: they do not hold its answer.
    answer = "The --storage.tsdb.auto-downsample flag enables downsampling; use `--login` too."
    assert unfound_names(answer, PASSAGES) == ["--login", "--storage.tsdb.auto-downsample"]


def test_a_name_the_users_instructions_give_counts_as_given() -> None:
    answer = "Pass --web.config.file. Output as `answer.json`."
    assert unfound_names(answer, PASSAGES, exempt="Write the file answer.json.") == []


def test_commands_in_a_code_block_are_checked() -> None:
    answer = "Run:\n```bash\npromtool load /path/to/file\n```"
    assert unfound_names(answer, PASSAGES) == ["/path/to/file"]


def test_a_url_is_the_users_address_not_a_name() -> None:
    answer = "Pass `--web.config.file`; Prometheus is then at `http://example.com/prometheus/`."
    assert unfound_names(answer, PASSAGES) == []
