"""Chain metrics on a crafted 3-link chain: fetch -> analyse -> report."""

from __future__ import annotations

import pytest

from corral_core.metrics import ChainDef, TrialResult, analyse, arm_metrics, chain_metrics, metrics_to_dict

ORDER = ["fetch", "analyse", "report"]


def link(
    episode: str, task: str, outcome: str, score: float | None = None, **fields: object
) -> TrialResult:
    """One link of an episode: outcome ok / fail / skip, or a raw trial status."""
    status = {"ok": "completed", "fail": "completed", "skip": "skipped"}.get(outcome, outcome)
    if score is None:
        score = {"ok": 1.0, "fail": 0.0}.get(outcome)
    return TrialResult.from_mapping(
        {"task_id": task, "arm": "x", "trial_index": int(episode[-1]), "status": status,
         "score": score, "episode_id": episode, "chain_position": ORDER.index(task), **fields}
    )


def crafted() -> list[TrialResult]:
    return [
        # e1: every link succeeds
        link("e1", "fetch", "ok"), link("e1", "analyse", "ok"), link("e1", "report", "ok"),
        # e2: the middle link fails, its dependent is skipped
        link("e2", "fetch", "ok"), link("e2", "analyse", "fail"), link("e2", "report", "skip"),
        # e3: the first link fails, both dependents skipped
        link("e3", "fetch", "fail"), link("e3", "analyse", "skip"), link("e3", "report", "skip"),
        # e4: the last link fails
        link("e4", "fetch", "ok"), link("e4", "analyse", "ok"), link("e4", "report", "fail"),
    ]


def test_per_link_end_to_end_and_partial_completion() -> None:
    m = chain_metrics(crafted(), ORDER)
    assert m.n_episodes == 4 and m.n_excluded_episodes == 0
    fetch, analyse, report = (m.links[t] for t in ORDER)
    assert (fetch.attempted, fetch.succeeded, fetch.skipped) == (4, 3, 0)
    assert (analyse.attempted, analyse.succeeded, analyse.failed, analyse.skipped) == (3, 2, 1, 1)
    assert (report.attempted, report.succeeded, report.failed, report.skipped) == (2, 1, 1, 2)
    assert analyse.success_rate == pytest.approx(2 / 3)
    assert analyse.completion_rate == pytest.approx(2 / 4)
    assert report.success_rate == pytest.approx(1 / 2)
    assert m.end_to_end.value == pytest.approx(1 / 4)
    # prefix completed per episode: 3, 1, 0, 2 out of 3 links
    assert m.partial_completion.value == pytest.approx((3 + 1 + 0 + 2) / 12)
    assert [m.episodes[e].prefix_completed for e in ("e1", "e2", "e3", "e4")] == [3, 1, 0, 2]
    assert m.episodes["e2"].outcomes == {
        "fetch": "success", "analyse": "failed", "report": "skipped"
    }
    # without weights every link weighs 1/3; skipped links score 0
    assert m.weights == pytest.approx({"fetch": 1 / 3, "analyse": 1 / 3, "report": 1 / 3})
    assert m.workflow_score.value == pytest.approx((3 + 1 + 0 + 2) / 12)


def test_partial_completion_counts_only_the_prefix_in_dependency_order() -> None:
    # fetch fails but the later links (not actually dependent) succeed: 2 of 3 links succeeded,
    # yet nothing was completed in dependency order before the first failure.
    records = [link("e1", "fetch", "fail"), link("e1", "analyse", "ok"), link("e1", "report", "ok")]
    m = chain_metrics(records, ORDER)
    assert m.partial_completion.value == 0.0
    assert m.links_succeeded.value == pytest.approx(2 / 3)
    assert m.end_to_end.value == 0.0


def test_missing_links_weights_and_order_from_chain_position() -> None:
    records = [*crafted()[:3], link("e5", "fetch", "ok", score=0.5)]  # e5 stopped after fetch
    m = chain_metrics(records, weights={"fetch": 0.3, "analyse": 0.3, "report": 0.4})
    assert m.chain_order == ORDER  # derived from chain_position
    assert m.links["analyse"].missing == 1
    assert m.episodes["e5"].outcomes["report"] == "missing"
    assert m.workflow_score.value == pytest.approx((1.0 + 0.3 * 0.5) / 2) and m.weights_note is None


def test_weights_that_do_not_sum_to_one_are_normalised_and_said() -> None:
    m = chain_metrics(crafted(), ORDER, weights={"fetch": 3, "analyse": 3, "report": 4})
    assert m.weights == pytest.approx({"fetch": 0.3, "analyse": 0.3, "report": 0.4})
    assert m.weights_note == "the weights sum to 10, not 1; normalised to fetch 0.3, analyse 0.3, report 0.4"


def test_cancelled_or_assisted_episodes_are_left_out_and_counted() -> None:
    records = [
        *crafted(),
        link("e5", "fetch", "ok"), link("e5", "analyse", "cancelled"),
        link("e6", "fetch", "ok", assisted=True),
        TrialResult(task_id="fetch", arm="x", score=1.0),  # no episode
        TrialResult(task_id="elsewhere", arm="x", score=1.0, episode_id="e1"),
    ]
    m = chain_metrics(records, ORDER)
    assert (m.n_episodes, m.n_excluded_episodes, m.n_ignored_records) == (4, 2, 2)
    assert chain_metrics(records, ORDER, include_assisted=True).n_episodes == 5


def test_bad_chain_input_is_refused() -> None:
    with pytest.raises(ValueError, match="twice"):
        chain_metrics(crafted(), ["fetch", "fetch"])
    with pytest.raises(ValueError, match="two records"):
        chain_metrics([*crafted(), link("e1", "fetch", "ok")], ORDER)
    with pytest.raises(ValueError, match="chain_position"):
        chain_metrics([TrialResult(task_id="fetch", episode_id="e1")])
    with pytest.raises(ValueError, match="not links"):
        chain_metrics(crafted(), ORDER, weights={"other": 1.0})


def test_chain_metrics_serialise() -> None:
    data = metrics_to_dict(chain_metrics(crafted(), ORDER))
    assert data["links"]["report"]["skipped"] == 2
    assert data["end_to_end"]["value"] == 0.25


def test_seed_weighted_workflow_score_by_hand_and_the_skipped_link_headline() -> None:
    """The seed: workflow_score = task1_score * 0.3 + task2_score * 0.3 + task3_score * 0.4."""
    records = [
        link("e1", "fetch", "ok", 1.0), link("e1", "analyse", "ok", 0.5), link("e1", "report", "ok", 0.8),
        link("e2", "fetch", "ok", 1.0), link("e2", "analyse", "fail", 0.0), link("e2", "report", "skip"),
        link("e3", "fetch", "fail", 0.0), link("e3", "analyse", "skip"), link("e3", "report", "skip"),
    ]
    weights = {"fetch": 0.3, "analyse": 0.3, "report": 0.4}
    by_hand = [1.0 * 0.3 + 0.5 * 0.3 + 0.8 * 0.4, 1.0 * 0.3 + 0.0 * 0.3 + 0.0 * 0.4, 0.0]
    m = chain_metrics(records, ORDER, weights=weights)
    assert [m.episodes[e].workflow_score for e in ("e1", "e2", "e3")] == pytest.approx(by_hand)
    assert m.workflow_score.value == pytest.approx(sum(by_hand) / 3)

    # the arm's headline scores the chain as one task by that workflow score: a skipped link counts
    # 0 instead of being left out, and the chain's success is end-to-end success (e1 only)
    chain = ChainDef("pipeline (chain)", tuple(ORDER), weights)
    arm = arm_metrics(records, chains=[chain])
    assert arm.n_tasks == 1 and arm.average_score.value == pytest.approx(sum(by_hand) / 3)
    unit = arm.chain_units["pipeline (chain)"]
    assert (unit.n, unit.c, unit.links) == (3, 1, ORDER)
    result = analyse(records, ["x"], chains=[chain])
    assert result.headline == pytest.approx(sum(by_hand) / 3)
    links_only = analyse(records, ["x"])  # the old view: links as tasks, skipped trials left out
    assert links_only.headline is not None and links_only.headline > result.headline


def test_materials_chain_shape_headline_counts_skipped_links_as_zero() -> None:
    """The issue's numbers: 3 rounds, the third fails its first link -> 0.667, not 0.889."""
    records = [link(f"e{r}", t, "ok") for r in (1, 2) for t in ORDER]
    records += [link("e3", "fetch", "fail"), link("e3", "analyse", "skip"), link("e3", "report", "skip")]
    chain = ChainDef("chain", tuple(ORDER))
    assert analyse(records, ["x"], chains=[chain]).headline == pytest.approx(2 / 3)
    assert analyse(records, ["x"]).headline == pytest.approx((2 / 3 + 1 + 1) / 3)  # 0.889: the old headline


def test_partial_completion_of_a_branching_chain_does_not_depend_on_how_links_are_listed() -> None:
    """seed -> left, seed -> right: an episode where `left` fails and `right` succeeds completed 2 of 3
    links whichever branch is written first (before: 1 of 3 when `left` came first, 2 of 3 otherwise)."""
    def rec(task: str, ok: bool) -> TrialResult:
        return TrialResult(task, "x", 0, score=1.0 if ok else 0.0, episode_id="e0")

    records = [rec("seed", True), rec("left", False), rec("right", True)]
    upstream = {"seed": (), "left": ("seed",), "right": ("seed",)}
    orders = (["seed", "left", "right"], ["seed", "right", "left"])
    shares = [chain_metrics(records, order, depends_on=upstream).partial_completion.value for order in orders]
    assert shares == [pytest.approx(2 / 3)] * 2
    # a failed seed completes nothing downstream, even where a branch passed
    failed_seed = [rec("seed", False), rec("left", True), rec("right", True)]
    assert chain_metrics(failed_seed, orders[0], depends_on=upstream).episodes["e0"].prefix_completed == 0


def test_per_link_rates_carry_their_n_and_interval() -> None:
    metrics = chain_metrics(crafted(), ORDER)
    analyse_link = metrics.links["analyse"]
    assert (analyse_link.attempted, analyse_link.succeeded) == (3, 2)
    assert analyse_link.success_ci is not None and analyse_link.success_ci[0] < 2 / 3 < analyse_link.success_ci[1]
    assert analyse_link.completion_ci is not None


def test_a_link_that_errored_outside_the_agent_sets_its_episode_apart_instead_of_failing_it() -> None:
    """A provider/environment error or a timeout measured the infrastructure: the episode is counted
    as errored, by fault, and left out of the link and chain rates (before: a failed link, a chain that
    did not complete). An error of the agent's own stays a failure."""
    from corral_core.metrics import ArmTally, ChainDef, chain_metrics

    def link(episode: str, task: str, **fields: object) -> TrialResult:
        base = {"arm": "a", "episode_id": episode, "task_id": task, "status": "completed", "score": 1.0,
                "trial_index": int(episode[1:])}
        return TrialResult(**{**base, **fields})  # type: ignore[arg-type]

    records = [link("e1", "t1"), link("e1", "t2"),
               link("e2", "t1"), link("e2", "t2", status="error", score=None, error="503", fault="provider"),
               link("e3", "t1"), link("e3", "t2", status="timeout", score=None, fault="timeout"),
               link("e4", "t1"), link("e4", "t2", status="error", score=None, error="bad parse", fault="agent")]
    metrics = chain_metrics(records, ["t1", "t2"])
    assert (metrics.n_episodes, metrics.n_errored_episodes) == (2, 2)
    assert metrics.errored_faults == {"provider": 1, "timeout": 1}
    assert metrics.links["t2"].failed == 1 and metrics.links["t2"].succeeded == 1  # e4 (the agent's) failed
    assert metrics.end_to_end.value == 0.5
    tally = ArmTally("a", chains=[ChainDef("c", ("t1", "t2"))])
    for record in records:
        tally.add(record)
    arm = tally.finish([1])
    assert (arm.tasks["t2"].n, arm.tasks["t2"].mean_score) == (2, 0.5)  # infrastructure errors: missing, not failures
    assert arm.n_missing == 2


def test_the_chain_line_names_the_episodes_set_apart() -> None:
    from corral_core.report import chain_line

    line = chain_line("a", {"n_episodes": 2, "n_errored_episodes": 2, "errored_faults": {"provider": 1, "timeout": 1}})
    assert line.endswith("2 episode(s) set apart as errored (provider 1, timeout 1), not counted as failures")
    assert "set apart" not in chain_line("a", {"n_episodes": 2})
