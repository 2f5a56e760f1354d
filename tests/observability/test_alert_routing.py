"""deploy/alertmanager/alertmanager.yml in a real Alertmanager (Debian's 0.25, installed when
missing) on 127.0.0.1, its example webhook receiver pointed at an HTTP server of the test's.

Proven: the receiver gets the alerts Alertmanager is sent, as its webhook JSON; one service
down holds back its own job's warnings and only those (`equal: [job]`): another stage's warning
reaches the receiver, the stopped stage's does not, and Alertmanager's API shows it suppressed.

The configuration is the file's but for the receiver's URL (the file's `.invalid` one resolves
nowhere) and `group_wait` (30 s, shortened to 1 s so the test does not wait for it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.observability.alertmanager_helpers import (
    ALERTMANAGER_CONFIG,
    WebhookReceiver,
    running_alertmanager,
    wait_until,
    webhook_receiver,
)

pytestmark = pytest.mark.observability

DOWN = {"alertname": "RagloopServiceDown", "job": "grader", "severity": "critical"}
GRADER_WARNING = {"alertname": "RagloopStageErrorRatioHigh", "job": "grader", "severity": "warning"}
RETRIEVER_WARNING = {**GRADER_WARNING, "job": "retriever"}


@dataclass(frozen=True)
class Routed:
    alertmanager: str
    receiver: WebhookReceiver


def configuration_for(workdir: Path, webhook_url: str) -> Path:
    config = yaml.safe_load(ALERTMANAGER_CONFIG.read_text())
    (receiver,) = config["receivers"]
    (webhook,) = receiver["webhook_configs"]
    assert webhook["url"].startswith("http://alerts-webhook.invalid/")  # the shipped example
    webhook["url"] = webhook_url
    config["route"]["group_wait"] = "1s"
    path = workdir / "alertmanager.yml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture
def routed(tmp_path: Path) -> Iterator[Routed]:
    with webhook_receiver() as (url, receiver):
        config = configuration_for(tmp_path, url)
        with running_alertmanager(tmp_path, config) as alertmanager:
            yield Routed(alertmanager, receiver)


def post_alerts(alertmanager: str, *alerts: dict[str, str]) -> None:
    """Alerts as Prometheus sends them (API v2), all in one request."""
    body = [{"labels": {**labels, "instance": f"{labels['job']}:9100"}} for labels in alerts]
    reply = httpx.post(f"{alertmanager}/api/v2/alerts", json=body, timeout=10)
    assert reply.status_code == 200, reply.text


def held(alertmanager: str) -> list[dict[str, Any]]:
    return httpx.get(f"{alertmanager}/api/v2/alerts", timeout=10).json()


def is_(labels: dict[str, str]) -> Callable[[dict[str, str]], bool]:
    return lambda alert: all(alert.get(k) == v for k, v in labels.items())


def test_the_example_receiver_gets_the_alert(routed: Routed) -> None:
    post_alerts(routed.alertmanager, RETRIEVER_WARNING)
    wait_until(lambda: any(map(is_(RETRIEVER_WARNING), routed.receiver.alerts())), "delivery")
    (post,) = routed.receiver.received()
    assert post["version"] == "4" and post["receiver"] == "ragloop-operators"
    assert post["status"] == "firing"
    assert post["groupLabels"] == {"alertname": RETRIEVER_WARNING["alertname"], "job": "retriever"}


def test_one_service_down_holds_back_only_its_own_warnings(routed: Routed) -> None:
    post_alerts(routed.alertmanager, DOWN, GRADER_WARNING, RETRIEVER_WARNING)

    def both_delivered() -> bool:
        alerts = routed.receiver.alerts()
        return any(map(is_(DOWN), alerts)) and any(map(is_(RETRIEVER_WARNING), alerts))

    wait_until(both_delivered, "the grader's outage and the retriever's warning delivered")
    states = {
        (a["labels"]["alertname"], a["labels"]["job"]): a["status"]
        for a in held(routed.alertmanager)
    }
    grader_warning = states[(GRADER_WARNING["alertname"], "grader")]
    assert grader_warning["state"] == "suppressed" and grader_warning["inhibitedBy"]
    assert states[(RETRIEVER_WARNING["alertname"], "retriever")]["state"] == "active"
    assert states[(DOWN["alertname"], "grader")]["state"] == "active"
    # Sent in the same request, the three groups are flushed together after group_wait: by the
    # time the other two arrived, the grader's warning would have too.
    time.sleep(2)
    assert not any(map(is_(GRADER_WARNING), routed.receiver.alerts()))
