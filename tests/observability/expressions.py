"""The PromQL of ragloop's dashboards and alert rules, read from deploy/, and the small amount of
PromQL handling the tests need: Grafana's variables, the metric names an expression reads, and an
alert's signal."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from tests.conftest import REPO_ROOT

DASHBOARDS_DIR = REPO_ROOT / "deploy" / "grafana" / "dashboards"
ALERT_RULES = REPO_ROOT / "deploy" / "prometheus" / "alert-rules.yml"
PROMETHEUS_CONFIG = REPO_ROOT / "deploy" / "prometheus" / "prometheus.yml"
DATASOURCES_DIR = REPO_ROOT / "deploy" / "grafana" / "provisioning" / "datasources"
DATASOURCES = DATASOURCES_DIR / "prometheus.yml"

# Grafana's built-in variables the dashboards may use, and what a test query puts in their place.
GRAFANA_VARIABLES = {"$__rate_interval": "1m", "$__range": "5m"}

_COMPARISON = re.compile(
    r"^(?P<signal>.*\S)\s*(?P<op>==|!=|>=|<=|>|<)\s*(?P<threshold>-?[\d.]+)$", re.S
)
_KEYWORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
}


@dataclass(frozen=True)
class Expression:
    source: str  # "dashboard-file.json: panel title" or "alert-rules.yml: AlertName"
    promql: str
    is_alert: bool = False

    @property
    def is_absence(self) -> bool:
        """An alert on a job having no series at all (``absent(...)``): it has a series only
        while the alert fires, so none while every service is scraped."""
        return self.is_alert and self.promql.startswith("absent(")

    @property
    def query(self) -> str:
        """What the test asks Prometheus: Grafana variables filled in; for an alert, its signal
        compared with ``bool`` so that there is one series per signal series, firing or not
        (an absence alert as it is)."""
        promql = self.promql
        for variable, value in GRAFANA_VARIABLES.items():
            promql = promql.replace(variable, value)
        if not self.is_alert or self.is_absence:
            return promql
        return alert_signal(promql)

    def __str__(self) -> str:
        return self.source


def dashboards() -> dict[str, dict[str, Any]]:
    return {p.name: json.loads(p.read_text()) for p in sorted(DASHBOARDS_DIR.glob("*.json"))}


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, including those inside collapsed rows."""
    for panel in dashboard.get("panels", []):
        yield panel
        yield from panel.get("panels", [])


def alert_rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(ALERT_RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def all_expressions() -> list[Expression]:
    """Every PromQL expression: those of the panels' Prometheus queries and the alert rules."""
    found = [
        Expression(f"{name}: {panel['title']} [{target['refId']}]", target["expr"])
        for name, board in dashboards().items()
        for panel in panels(board)
        for target in panel.get("targets", [])
        if target["datasource"]["type"] == "prometheus"
    ]
    found += [
        Expression(f"alert-rules.yml: {rule['alert']}", rule["expr"].strip(), is_alert=True)
        for rule in alert_rules()
        if "alert" in rule
    ]
    return found


def alert_signal(expr: str) -> str:
    """``signal > 0.05`` becomes ``signal > bool 0.05``: 0 or 1 for every series of the signal."""
    match = _COMPARISON.match(expr.strip())
    if match is None:
        raise ValueError(f"an alert expression must end in `<comparison> <number>`: {expr}")
    return f"{match['signal']} {match['op']} bool {match['threshold']}"


def metric_names(promql: str) -> set[str]:
    """The metric names an expression reads (labels, strings, functions and keywords removed)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', "", promql)  # string literals
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # range selectors
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        name = match.group()
        is_function = re.match(r"\s*\(", text[match.end() :]) is not None
        if not is_function and name not in _KEYWORDS and not _is_number_suffix(text, match.start()):
            names.add(name)
    return names


def _is_number_suffix(text: str, start: int) -> bool:
    """``e`` of ``1e3`` or a duration unit such as the ``m`` of ``5m``."""
    return start > 0 and text[start - 1].isdigit()


def prometheus_datasource() -> dict[str, Any]:
    [datasource] = yaml.safe_load(DATASOURCES.read_text())["datasources"]
    return dict(datasource)


def provisioned_datasource_uid() -> str:
    """The Prometheus datasource's uid."""
    return str(prometheus_datasource()["uid"])


def provisioned_datasources() -> dict[str, str]:
    """The type of every provisioned datasource by uid (Prometheus, Jaeger)."""
    return {
        str(datasource["uid"]): str(datasource["type"])
        for path in sorted(DATASOURCES_DIR.glob("*.yml"))
        for datasource in yaml.safe_load(path.read_text())["datasources"]
    }


def scrape_jobs() -> dict[str, list[str]]:
    """Job name to targets (host:port), from deploy/prometheus/prometheus.yml: static ones, and
    the names DNS service discovery resolves, with their port."""
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text())
    return {job["job_name"]: job_targets(job) for job in config["scrape_configs"]}


def job_targets(job: dict[str, Any]) -> list[str]:
    static = [t for config in job.get("static_configs", []) for t in config["targets"]]
    resolved = [
        f"{name}:{config['port']}"
        for config in job.get("dns_sd_configs", [])
        for name in config["names"]
    ]
    return static + resolved
