"""bench.compare's accounting: the llama-server's counters, CPU time from /proc, the baseline's
token counts, the per-system figures, ratios and targets, and the choice of queries."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage

from bench.baseline import usage_of
from bench.compare import rotated, throughput_runs
from bench.comparison.cpu import cpu_seconds_of_stat
from bench.comparison.llama_metrics import ServerCounts, parse_counters
from bench.comparison.runs import Answered, QueryRun
from bench.comparison.services import corpus_key
from bench.comparison.summary import (
    Throughput,
    comparison_figures,
    merged_results,
    target_figures,
    throughput_figures,
)
from bench.comparison.workload import WorkItem, limited_corpus, pubmedqa_items, scifact_items
from bench.pubmedqa import DECISION_INSTRUCTION, Question
from bench.scifact import SciFact
from ragloop.core.domain import ModelUsage, SourceDocument
from ragloop.retriever.settings import RetrieverSettings

EXPOSITION = """\
# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 1200
llamacpp:prompt_seconds_total 3.5
llamacpp:tokens_predicted_total 80
llamacpp:tokens_predicted_seconds_total 4.25
llamacpp:prompt_tokens_cached_total 300
llamacpp:n_decode_total 95
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 0
"""


def test_the_servers_counters_are_read_and_subtracted() -> None:
    later = parse_counters(EXPOSITION)
    earlier = ServerCounts(prompt_tokens=200, cached_prompt_tokens=100, completion_tokens=30)

    spent = later - earlier

    assert (spent.prompt_tokens, spent.cached_prompt_tokens, spent.completion_tokens) == (
        1000,
        200,
        50,
    )
    assert spent.sent_prompt_tokens == 1200
    assert later.model_seconds == pytest.approx(7.75)
    assert parse_counters("# nothing\n") == ServerCounts()


def test_cpu_time_is_read_after_a_command_name_with_spaces_and_parentheses() -> None:
    fields_3_to_13 = "S 1 2 3 4 5 6 7 8 9 10"  # state … cmajflt
    stat = f"4242 (python (x) y) {fields_3_to_13} 250 150 7 8 20 0"

    assert cpu_seconds_of_stat(stat) == pytest.approx(400 / 100)


def test_the_baselines_tokens_come_from_the_servers_usage_fields() -> None:
    reply = AIMessage(
        "yes",
        response_metadata={
            "token_usage": {"prompt_tokens": 321, "completion_tokens": 9, "total_tokens": 330}
        },
    )
    assert usage_of(reply) == ModelUsage(calls=1, prompt_tokens=321, completion_tokens=9)
    assert usage_of(AIMessage("no usage")) == ModelUsage(calls=1)


SCIFACT_ITEM = WorkItem("scifact", "1", "Claim.", frozenset({"d1", "d2"}))
PUBMED_ITEM = WorkItem("pubmedqa", "p1", "Q? Begin…", frozenset({"p1"}), "yes")


def run(
    system: str,
    item: WorkItem,
    seconds: float,
    *,
    evidence: list[str],
    usage: ModelUsage,
    server: ServerCounts | None = None,
    answer: str = "Yes.",
    path: list[str] | None = None,
    cpu: dict[str, float] | None = None,
) -> QueryRun:
    answered = Answered(
        answer=answer,
        evidence=evidence,
        usage=usage,
        node_seconds={"grade": seconds / 2, "generate": seconds / 4},
        decision_path=path or ["retrieve", "grade", "generate"],
        rewrites=0,
    )
    return QueryRun(system, item, seconds, answered, server or ServerCounts(), cpu or {})


def test_per_system_figures_ratios_and_targets() -> None:
    matching = ServerCounts(prompt_tokens=60, cached_prompt_tokens=40, completion_tokens=10)
    runs = [
        run("ragloop", SCIFACT_ITEM, 10, evidence=["d1", "x"], usage=ModelUsage("", 3, 100, 10),
            server=matching, cpu={"orchestrator": 0.5, "grader": 0.25}),
        run("ragloop", PUBMED_ITEM, 20, evidence=[], usage=ModelUsage("", 2, 200, 30),
            answer="Maybe.", cpu={"orchestrator": 0.5, "grader": 0.25}),
        run("baseline", SCIFACT_ITEM, 30, evidence=["d1", "d2", "x", "y"],
            usage=ModelUsage("", 9, 600, 50)),
        run("baseline", PUBMED_ITEM, 50, evidence=["p1"], usage=ModelUsage("", 9, 400, 50)),
        QueryRun("baseline", PUBMED_ITEM, 5, None, error="TimeoutError: slow"),
    ]  # fmt: skip

    figures = comparison_figures(runs)

    assert figures["runs_ragloop"] == 2 and figures["failed_baseline"] == 1
    assert figures["prompt_tokens_per_query_ragloop"] == 150
    assert figures["prompt_token_ratio_vs_baseline"] == pytest.approx(150 / 500)
    assert figures["latency_p50_s_ragloop"] == 15
    assert figures["p50_latency_ratio_vs_baseline"] == pytest.approx(15 / 40)
    assert figures["grade_seconds_per_query_ragloop"] == 7.5
    assert figures["other_seconds_per_query_ragloop"] == pytest.approx(15 / 4)
    # Precision over the queries that handed something over; recall over all, failures as 0.
    assert figures["evidence_precision_ragloop"] == 0.5
    assert figures["no_evidence_share_ragloop"] == 0.5
    assert figures["evidence_recall_scifact_ragloop"] == 0.5
    assert figures["evidence_recall_ragloop"] == pytest.approx(0.25)
    assert figures["evidence_precision_baseline"] == pytest.approx((0.5 + 1.0) / 2)
    assert figures["evidence_recall_pubmedqa_baseline"] == 0.5
    assert figures["pubmedqa_decision_accuracy_ragloop"] == 0.0
    assert figures["pubmedqa_decision_accuracy_baseline"] == 0.5
    assert figures["pubmedqa_decided_share_ragloop"] == 1.0  # "Maybe." decides, wrongly
    # Per data set: latency and tokens of its answered runs only.
    assert figures["latency_p50_s_pubmedqa_baseline"] == 50
    assert figures["prompt_tokens_per_query_scifact_ragloop"] == 100
    assert figures["prompt_tokens_per_query_pubmedqa_baseline"] == 400
    assert figures["cpu_seconds_per_query_ragloop"] == 0.75
    assert figures["cpu_seconds_per_query_orchestrator_ragloop"] == 0.5
    assert figures["usage_matches_server_share_ragloop"] == 0.5
    assert "grpc_overhead_ratio" not in figures  # no in-process runs

    targets = target_figures(figures)

    assert targets["target_prompt_tokens"] is True
    assert targets["target_p50_latency"] is True
    assert targets["target_evidence_precision"] is False  # 0.5 < 0.75
    assert targets["target_evidence_recall"] is False
    assert targets["target_grpc_overhead"] is None  # not measured


def test_the_boundary_is_what_remains_without_the_models_time() -> None:
    def model(seconds: float) -> ServerCounts:
        return ServerCounts(prompt_seconds=seconds / 2, completion_seconds=seconds / 2)

    usage = ModelUsage("", 1, 1, 1)
    runs = [
        run("ragloop", SCIFACT_ITEM, 10.0, evidence=[], usage=usage, server=model(9.5)),
        run("ragloop_inprocess", SCIFACT_ITEM, 9.0, evidence=[], usage=usage, server=model(8.7)),
        run("ragloop", PUBMED_ITEM, 20.0, evidence=[], usage=usage, server=model(19.0),
            path=["retrieve", "grade", "rewrite"]),
        run("ragloop_inprocess", PUBMED_ITEM, 21.0, evidence=[], usage=usage,
            server=model(20.4)),
    ]  # fmt: skip

    figures = comparison_figures(runs)

    # Without the model: 0.5 vs 0.3 s and 1.0 vs 0.6 s; the median difference is 0.3 s.
    assert figures["grpc_overhead_ms_p50"] == pytest.approx(300)
    assert figures["grpc_overhead_ratio"] == pytest.approx(15 / 15)
    assert figures["grpc_overhead_share_p50"] == pytest.approx(0.3 / 15)
    assert (figures["grpc_overhead_pairs"], figures["grpc_overhead_same_path_pairs"]) == (2, 1)
    assert target_figures(figures)["target_grpc_overhead"] is True


def test_throughput_is_completed_queries_per_minute() -> None:
    figures = throughput_figures(
        [Throughput("ragloop", 2, 6, 1, 120.0), Throughput("baseline", 1, 0, 0, 0.0)]
    )
    assert figures == {
        "throughput_per_minute_ragloop_c2": 3.0,
        "throughput_failed_ragloop_c2": 1,
        "throughput_per_minute_baseline_c1": 0.0,
        "throughput_failed_baseline_c1": 0,
    }


def test_results_keep_the_earlier_throughput_but_no_figures_of_runs_that_are_gone() -> None:
    previous = {
        "date": "2026-11-01",
        "throughput_per_minute_ragloop_c1": 2.0,
        "idle_cpu_share_grader": 0.01,
        "latency_p50_s_ragloop_inprocess": 9.0,
        "grpc_overhead_ratio": 1.1,
        "grpc_overhead_share_p50": 0.01,
        "target_grpc_overhead": True,
        "prompt_tokens_per_query_ragloop": 999.0,
    }
    from_runs = {"prompt_tokens_per_query_ragloop": 150.0, "runs_ragloop": 2}

    merged = merged_results(previous, {"date": "2026-11-23"}, from_runs)

    assert merged["date"] == "2026-11-23"
    assert merged["throughput_per_minute_ragloop_c1"] == 2.0
    assert merged["idle_cpu_share_grader"] == 0.01
    assert merged["prompt_tokens_per_query_ragloop"] == 150.0
    # The in-process runs are no longer in the runs file: their figures and target go.
    assert "latency_p50_s_ragloop_inprocess" not in merged
    assert "grpc_overhead_ratio" not in merged
    assert merged["target_grpc_overhead"] is None


def test_queries_are_a_seeded_choice_and_later_sets_do_not_overlap() -> None:
    data = SciFact(
        corpus=[],
        queries={str(i): f"claim {i}" for i in range(20)},
        qrels={str(i): {f"d{i}": 1, f"n{i}": 0} for i in range(20)},
    )

    first = scifact_items(data, 5, seed=13)
    again = scifact_items(data, 3, seed=13)
    later = scifact_items(data, 6, seed=13, skip=5)

    assert [i.id for i in again] == [i.id for i in first[:3]]
    assert not {i.id for i in first} & {i.id for i in later}
    assert first[0].relevant == {f"d{first[0].id}"}  # judged 0 is not relevant


def test_pubmedqa_items_ask_for_the_decision_and_are_judged_by_their_abstract() -> None:
    [item] = pubmedqa_items([Question("123", "Does it help?", "no")])
    assert item.text == "Does it help?"  # the question as asked: it is searched and graded
    assert item.instructions == DECISION_INSTRUCTION  # for the generator only
    assert (item.relevant, item.decision) == ({"123"}, "no")


def test_a_limited_corpus_keeps_the_documents_that_are_needed() -> None:
    corpus = [SourceDocument(source=f"s{i}", text="t") for i in range(10)]
    assert [d.source for d in limited_corpus(corpus, 2, {"s7"})] == ["s0", "s1", "s7"]
    assert limited_corpus(corpus, 0, set()) == corpus


def test_every_system_takes_its_turn_to_go_first() -> None:
    assert [rotated("abc", turn) for turn in range(4)] == [
        ["a", "b", "c"],
        ["b", "c", "a"],
        ["c", "a", "b"],
        ["a", "b", "c"],
    ]


class CountingSystem:
    """A system that answers at once, failing on the items named."""

    name = "fake"

    def __init__(self, failing: set[str]) -> None:
        self.processes: dict[str, int] = {}
        self.failing = failing
        self.asked: list[str] = []

    async def answer(self, item: WorkItem) -> Answered:
        self.asked.append(item.id)
        if item.id in self.failing:
            raise RuntimeError("no")
        return Answered("Yes.", [], ModelUsage(), {}, [], 0)


async def test_throughput_runs_each_client_count_on_its_own_items() -> None:
    system = CountingSystem(failing={"b"})
    levels = [[WorkItem("scifact", i, "?", frozenset()) for i in ids] for ids in ("a", "bcd")]

    results = await throughput_runs([system], [1, 2], levels)

    assert [(r.clients, r.completed, r.failed) for r in results] == [(1, 1, 0), (2, 2, 1)]
    assert sorted(system.asked) == ["a", "b", "c", "d"]  # every item once
    assert await throughput_runs([system], [1, 2, 4], []) == []  # the part was not run


def test_the_ingestion_cache_key_follows_the_corpora_and_the_chunking() -> None:
    corpora = {"kb": [SourceDocument(source="a", text="some text")]}
    settings = RetrieverSettings(milvus_uri="unused")
    key = corpus_key(corpora, settings)

    assert key == corpus_key(corpora, settings.model_copy(update={"rrf_k": 60}))  # search only
    assert key != corpus_key(corpora, settings.model_copy(update={"chunk_size": 500}))
    assert key != corpus_key({"kb": [SourceDocument(source="a", text="other text")]}, settings)
    assert key != corpus_key({"other": corpora["kb"]}, settings)
