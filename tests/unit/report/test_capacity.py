"""Capacity at SLO as a compared metric: ×ratio of the baseline's, a verdict only when the
capacity intervals separate, refused under a different SLO (report.capacity, the SLO section)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inferlab.report.capacity import capacity_rows, stored_capacities
from inferlab.report.sections.slo import slo_section
from inferlab.stats.capacity import CapacityValue, compare_capacity
from inferlab.stats.summary import Interval
from inferlab.store import Store


def _data(slo: str, low: int, high: int | None, est: float, lo: float, hi: float) -> dict[str, Any]:
    return {
        "slo": slo, "low": low, "high": high, "holds_at": low, "simulated": True,
        "estimate": {"estimate": est, "low": lo, "high": hi, "level": 0.95}, "workload": "w",
    }  # fmt: skip


def test_compare_capacity_claims_only_when_the_intervals_separate() -> None:
    base = CapacityValue("s", 10, 11, Interval(10.5, 10.2, 10.8, 0.95))
    up = compare_capacity(base, CapacityValue("s", 20, 21, Interval(20.5, 20.1, 20.9, 0.95)))
    assert up.verdict == "higher" and up.ratio is not None
    assert up.ratio.low < up.ratio.estimate == 20.5 / 10.5 < up.ratio.high
    assert compare_capacity(base, CapacityValue("s", 11, 12)).verdict == "no difference shown"
    assert compare_capacity(base, CapacityValue("s", 4, 5)).verdict == "lower"
    assert compare_capacity(base, CapacityValue("s", 40, None)).verdict == "higher"
    other = compare_capacity(base, CapacityValue("t", 20, 21))
    assert (
        other.verdict == "not comparable" and other.ratio is None and "SLO t vs s" in other.reason
    )


def test_the_report_shows_each_configs_capacity_against_the_baseline(tmp_path: Path) -> None:
    with Store(tmp_path / "t.db") as store, store.transaction():
        cid = store.campaign_id("c")
        ids = {n: store.config_id(cid, n, engine="sim", model="m") for n in ("base", "fast", "odd")}
        store.add_analysis("capacity", "s", _data("s", 10, 11, 10.5, 10.2, 10.8),
                           campaign="c", config_id=ids["base"])  # fmt: skip
        store.add_analysis("capacity", "s", _data("s", 20, 21, 21.0, 20.4, 21.6),
                           campaign="c", config_id=ids["fast"])  # fmt: skip
        store.add_analysis("capacity", "t", _data("t", 30, 31, 30.5, 30.1, 30.9),
                           campaign="c", config_id=ids["odd"])  # fmt: skip
    with Store(tmp_path / "t.db") as store:
        rows = capacity_rows(stored_capacities(store, "c"), store.configs.config_names("c"), None)
        sec = slo_section(store, "c")
    assert [r.config for r in rows] == ["base", "fast", "odd"]
    assert rows[1].ratio_text == "×2.00 [1.89–2.12] higher"
    assert rows[2].ratio_text == "not comparable: SLO t vs s"
    assert sec is not None and "SIMULATED" in sec.markdown
    assert "| fast | s | C 20–21 (isotonic 21.0 \\[20.4–21.6\\]) | ×2.00" in sec.markdown


def test_a_capacity_over_rate_reads_in_req_s_and_is_not_compared_with_one_over_concurrency(
    tmp_path: Path,
) -> None:
    rate = CapacityValue("s", 2.5, 2.75, Interval(2.6, 2.5, 2.7, 0.95), "w", "rate")
    closed = CapacityValue("s", 10, 11, Interval(10.5, 10.2, 10.8, 0.95), "w")
    no = compare_capacity(closed, rate)
    assert no.verdict == "not comparable" and "capacity over rate vs concurrency" in no.reason
    faster = compare_capacity(rate, CapacityValue("s", 5.0, 5.25, Interval(5.1, 5.0, 5.2, 0.95), "w",
                                                  "rate"))  # fmt: skip
    assert faster.verdict == "higher" and faster.ratio is not None
    with Store(tmp_path / "t.db") as store, store.transaction():
        cid = store.campaign_id("c")
        ids = {n: store.config_id(cid, n, engine="sim", model="m") for n in ("base", "fast")}
        for name, low, est in (("base", 2.5, 2.6), ("fast", 5.0, 5.1)):
            data = _data("s", 0, None, est, est - 0.1, est + 0.1)
            data.update(unit="rate", step=0.25, low=low, high=low + 0.25)
            store.add_analysis("capacity", "s", data, campaign="c", config_id=ids[name])
    with Store(tmp_path / "t.db") as store:
        rows = capacity_rows(stored_capacities(store, "c"), store.configs.config_names("c"), None)
    assert rows[0].capacity_text == "2.5–2.75 req/s (isotonic 2.6 [2.5–2.7])"
    assert rows[1].ratio_text.endswith("higher") and rows[1].value.unit == "rate"


def test_the_report_says_whether_a_capacity_is_of_one_launch_or_across_launches(
    tmp_path: Path,
) -> None:
    one = {**_data("s", 10, 11, 10.5, 10.2, 10.8), "definition": "…", "launch": None}
    across = {**_data("s", 12, 14, 13.0, 11.9, 14.2), "definition": "…",
              "launch": {"tau": 0.06, "df": 4, "launches": 5, "source": "stored"}}  # fmt: skip
    with Store(tmp_path / "t.db") as store, store.transaction():
        cid = store.campaign_id("c")
        ids = {n: store.config_id(cid, n, engine="sim", model="m") for n in ("a", "b", "old")}
        for n, d in (("a", one), ("b", across), ("old", _data("s", 9, 9, 9.2, 9.0, 9.4))):
            store.add_analysis("capacity", "s", d, campaign="c", config_id=ids[n])
    with Store(tmp_path / "t.db") as store:
        rows = {r.config: r for r in capacity_rows(stored_capacities(store, "c"), ["a"], "a")}
    assert rows["a"].capacity_text.endswith("; one launch")
    assert rows["b"].capacity_text.endswith("; across launches ±6.0%")
    assert rows["b"].to_json()["launches"] == "across launches ±6.0%"
    assert "launch" not in rows["old"].capacity_text  # stored before: as it was
