"""Regression against the base branch: `--compare-to REF` gates on the snapshots committed at REF.

Each test builds a small git history: a base commit with one skill and its snapshot, then a
pull-request commit that changes the skill and updates the snapshot (as a PR must, to pass the
snapshot comparison), so only a comparison with the base can see what changed.
"""

from __future__ import annotations

import html
import json
import subprocess
from pathlib import Path

import pytest

from plugin_support import make_seed

# `cover-<name>` models answer a task right only when the skill lists its number (`COVERS: 0 1 ...`);
# as the optimizer they propose no edit, so the transferred score is the skill's own.
COVER_CONFTEST = '''
import re

from pytest_skilltransfer.models.base import Reply, Usage, register_family


class Cover:
    def __init__(self, name):
        self.name = self.model_id = name

    def complete(self, request):
        user = request.messages[0].content
        if "# Failing criteria (training tasks)" in user:
            text = "[]"
        else:
            number = user.split()[-1]
            listed = re.search(r"COVERS: ([0-9 ]*)", request.system)
            text = "Routed: " + number + (" Owner: @team" if listed and number in listed.group(1).split() else "")
        return Reply(text=text, usage=Usage(len(user) // 4, len(text) // 4), model=self.name)


register_family("cover", lambda name: name.startswith("cover-"), Cover, "cover-<name>: answers the tasks its skill lists")
'''
TASKS = 12
GOOD = "COVERS: " + " ".join(str(i) for i in range(TASKS))
WORSE = "COVERS: none"
SNAPSHOT = "seeds/router/__snapshots__/transfer[cover-a_to_cover-b].md"


def git(path: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=Reviewer", "-c", "user.email=reviewer@example.com", *args],
                          cwd=path, capture_output=True, text=True, check=True)
    return done.stdout


def write_skill(seed: Path, rule: str) -> None:
    (seed / "SKILL.md").write_text(f"# router\n\nRoute the ticket to a team.\n\n{rule}\n")


def history(pytester: pytest.Pytester, base_rule: str, pr_rule: str) -> Path:
    """main: the seed with `base_rule` and its snapshot; branch pr: `pr_rule`, snapshot updated."""
    pytester.makeconftest(COVER_CONFTEST)
    pytester.makeini("[pytest]\nskilltransfer_pair = cover-a:cover-b\nskilltransfer_limit_replay = 0\n"
                     "skilltransfer_limit_holdout = 0\nskilltransfer_regression_tolerance = 0.05\n")
    seed = make_seed(pytester.path / "seeds", "router", tasks=TASKS)
    write_skill(seed, base_rule)
    git(pytester.path, "init", "-q", "-b", "main")
    pytester.runpytest_subprocess("--snapshot-update").assert_outcomes(passed=1)
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-qm", "base")
    git(pytester.path, "checkout", "-qb", "pr")
    write_skill(seed, pr_rule)
    pytester.runpytest_subprocess("--snapshot-update").assert_outcomes(passed=1)
    git(pytester.path, "commit", "-qam", "change the skill", "--allow-empty")  # the same rule: the same files
    return seed


def test_a_regressed_pull_request_fails_against_the_base_branch(pytester: pytest.Pytester) -> None:
    history(pytester, GOOD, WORSE)
    pytester.runpytest_subprocess().assert_outcomes(passed=1)  # against its own updated snapshot: blind
    result = pytester.runpytest_subprocess("--compare-to=main", "--skilltransfer-json=report.json")
    result.assert_outcomes(failed=1)
    commit = git(pytester.path, "rev-parse", "main").strip()
    result.stdout.fnmatch_lines([
        "  FAILED regression: transferred change -1.000 [[]-1.000, -0.110[]] over 9 common task(s) vs the snapshot "
        f"at main ({commit[:7]}) (p = 0.00391, tolerance 0.050); the drop is beyond the tolerance; this change "
        "makes the item worse than its base",
        f"regression against main ({commit[:7]}): 1 regressed",
        "  seeds/router*::transfer[[]cover-a->cover-b[]]: 1.00 -> 0.00  regressed",
    ], consecutive=False)
    report = json.loads((pytester.path / "report.json").read_text())
    assert report["compare_to"] == {"ref": "main", "commit": commit, "chosen_by": "--compare-to"}
    # the pair (baseline and transferred alike) stopped for futility at 3 of 12 tasks; the regression gate, open
    # there, looked on with the transferred skill alone and decided at its look 3 (9 tasks, 99%)
    looks = report["results"][0]["sequential"]
    assert (looks["tasks"], looks["reason"], looks["regression"]) == (3, "futile", {"look": 3, "tasks": 9,
                                                                                     "alpha_share": 0.2})
    assert list(looks["reference"]) == [f"hd-{i:02d}" for i in range(3, 9)]
    record = report["results"][0]["compare"]
    cause = record.pop("cause")
    assert set(cause) == {"seed_diff", "tasks", "learned_before", "accept_tolerance", "seed_toml"}
    assert cause["tasks"][0]["answer"].startswith("Routed: ")  # the answer now (the ref keeps only scores)
    assert record == {"ref": "main", "commit": commit, "snapshot": SNAPSHOT, "status": "compared",
                      "before": 1.0, "after": 0.0, "verdict": "fail"}


def test_an_improved_pull_request_passes_against_the_base_branch(pytester: pytest.Pytester) -> None:
    history(pytester, WORSE, GOOD)
    result = pytester.runpytest_subprocess("--compare-to=main", "--skilltransfer-md=report.md",
                                           "--skilltransfer-json=report.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["regression against main (*): no regression",
                                 "  seeds/router*::transfer[[]cover-a->cover-b[]]: 0.00 -> 1.00  ok"])
    markdown = (pytester.path / "report.md").read_text()
    assert "## Regression against main (" in markdown
    item = json.loads((pytester.path / "report.json").read_text())["results"][0]["item"]
    assert f"| {item} | 0.00 | 1.00 | ok |" in markdown


def test_the_pull_requests_base_comes_from_github_base_ref(pytester: pytest.Pytester,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    history(pytester, GOOD, WORSE)
    monkeypatch.setenv("GITHUB_BASE_REF", "main")
    result = pytester.runpytest_subprocess("--compare-to", "--skilltransfer-json=report.json")
    result.assert_outcomes(failed=1)
    assert json.loads((pytester.path / "report.json").read_text())["compare_to"]["chosen_by"] == "GITHUB_BASE_REF"
    monkeypatch.setenv("GITHUB_BASE_REF", "release")
    missing = pytester.runpytest_subprocess("--compare-to")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    missing.stderr.fnmatch_lines(["*--compare-to: GITHUB_BASE_REF is 'release' but neither origin/release nor release "
                                  "is in *; check out with fetch-depth: 0*"])


def test_without_github_base_ref_the_merge_base_with_the_default_branch_is_used(pytester: pytest.Pytester,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    history(pytester, GOOD, WORSE)
    monkeypatch.delenv("GITHUB_BASE_REF", raising=False)
    pytester.makeini(pytester.path.joinpath("tox.ini").read_text() + "\nskilltransfer_compare_to = auto\n")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["regression against merge-base(HEAD, main) (*): 1 regressed"])


def test_an_item_new_in_the_pull_request_is_reported_as_new(pytester: pytest.Pytester) -> None:
    history(pytester, GOOD, GOOD)
    write_skill(make_seed(pytester.path / "seeds", "triage", tasks=TASKS), GOOD)
    pytester.runpytest_subprocess("--snapshot-update").assert_outcomes(passed=2)
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-qm", "a new seed")
    result = pytester.runpytest_subprocess("--compare-to=main", "--skilltransfer-json=report.json")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["regression against main (*): 1 new (no snapshot at the ref)",
                                 "  seeds/triage*::transfer[[]cover-a->cover-b[]]: - -> 1.00  new (no snapshot at the ref)",
                                 "  (1 more item(s) unchanged and passing; every item is in the Markdown and JSON reports)"])
    records = {r["seed"]: r["compare"] for r in json.loads((pytester.path / "report.json").read_text())["results"]}
    assert records["triage"]["status"] == "new" and records["triage"]["before"] is None


@pytest.mark.parametrize("setup, args, message", [
    ("git", ("--compare-to=no-such-branch",), "--compare-to: git cannot read 'no-such-branch' in *; fetch it first*"),
    ("none", ("--compare-to=main",), "--compare-to: * is not in a git repository*"),
])
def test_a_ref_that_cannot_be_read_stops_the_run(pytester: pytest.Pytester, setup: str, args: tuple[str, ...],
                                                 message: str) -> None:
    pytester.makeconftest(COVER_CONFTEST)
    pytester.makeini("[pytest]\nskilltransfer_pair = cover-a:cover-b\n")
    make_seed(pytester.path / "seeds", "router")
    if setup == "git":
        git(pytester.path, "init", "-q", "-b", "main")
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}"])


def test_a_snapshot_at_the_ref_without_per_task_scores_is_reported_not_compared(tmp_path: Path) -> None:
    from pytest_skilltransfer.plugin.compare_to import BaseRef, Before
    from plugin_support import item_record
    from pytest_skilltransfer.reports.comparison import summary_lines

    base = BaseRef("main", "0" * 40, "--compare-to", tmp_path)
    old = Before(base, tmp_path / SNAPSHOT, "# router: cover-a -> cover-b\n\n| transferred | 1.000 | ...\n")
    record = old.record(item_record(transferred=0.0), {"gates": [{"gate": "regression_tolerance", "verdict": "pass"}]})
    assert (record["status"], record["verdict"], record["before"]) == ("unscored", "unscored", None)
    lines = summary_lines([item_record(seed="router", item="seeds/router::transfer[cover-a->cover-b]", compare=record)])
    assert lines == ["regression against main (0000000): 1 not compared (the snapshot at the ref has no per-task scores)",
                     "  seeds/router::transfer[cover-a->cover-b]: - -> 0.00  not compared (the snapshot at the ref has "
                     "no per-task scores)"]


def test_a_regression_shows_its_cause_the_seed_diff_the_missed_checks_and_the_accept_line(
        pytester: pytest.Pytester) -> None:
    """The pull request's own SKILL.md edit beside the checks it newly misses, labelled with the ref, and the
    tolerance that accepts the drop on purpose: in the terminal, the Markdown and the page's first section."""
    history(pytester, GOOD, WORSE)
    result = pytester.runpytest_subprocess("--compare-to=main", "--skilltransfer-json=report.json",
                                           "--skilltransfer-md=report.md", "--skilltransfer-html=report.html")
    result.assert_outcomes(failed=1)
    commit = git(pytester.path, "rev-parse", "main").strip()[:7]
    out = result.stdout.str()
    assert f"cause of the change vs main ({commit}): transferred 1.00 -> 0.00 (regressed)" in out
    assert f"-{GOOD}" in out and f"+{WORSE}" in out and "diff --git a/seeds/router/SKILL.md" in out
    assert "checks they now miss: contains=Owner: (3 of 3)" in out  # the pair's tasks: the report keeps their answers
    accept = "[thresholds] regression_tolerance = 0.12  # in seeds/router/seed.toml"
    assert accept in out and "vs snapshot" not in out
    record = json.loads((pytester.path / "report.json").read_text())["results"][0]["compare"]
    assert record["cause"]["accept_tolerance"] == 0.12 and len(record["cause"]["tasks"]) == 3
    assert "__snapshots__" not in record["cause"]["seed_diff"]  # the results are not the cause
    markdown = (pytester.path / "report.md").read_text()
    look = markdown.split("## Needs a look", 1)[1].split("\n## ", 1)[0]
    assert f"**cause, vs main ({commit})**" in look and f"+{WORSE}" in look and accept in look
    assert "`contains=Owner:` (3)" in look
    page = (pytester.path / "report.html").read_text()
    first = page.split("<h2>Needs a look</h2>", 1)[1].split("<h2>", 1)[0]
    assert f"cause, vs main ({commit})" in first and f"+{WORSE}" in first and "regression_tolerance = 0.12" in first
    item = json.loads((pytester.path / "report.json").read_text())["results"][0]["item"]
    assert "--transfer-compare-to=main --transfer-regression-tolerance=0.12" in first and html.escape(item) in first
    ini = pytester.path / "tox.ini"
    ini.write_text(ini.read_text().replace("skilltransfer_regression_tolerance = 0.05", ""))
    pytester.runpytest_subprocess("--compare-to=main").assert_outcomes(failed=1)  # the default tolerance
    pytester.path.joinpath("seeds/router/seed.toml").write_text("[thresholds]\nregression_tolerance = 0.48\n")
    pytester.runpytest_subprocess("--compare-to=main").assert_outcomes(passed=1)  # accepted on purpose


def test_a_regression_against_the_committed_snapshot_shows_the_uncommitted_edit(pytester: pytest.Pytester) -> None:
    """Without --compare-to: the regression gate fails against the snapshot on disk, and the cause is the
    seed's edit not yet committed (its diff against HEAD), labelled with what it is compared to."""
    seed = history(pytester, GOOD, GOOD)
    write_skill(seed, WORSE)
    result = pytester.runpytest_subprocess("--skilltransfer-json=report.json", "--skilltransfer-md=report.md")
    result.assert_outcomes(failed=1)
    head = git(pytester.path, "rev-parse", "HEAD").strip()[:7]
    out = result.stdout.str()
    assert f"cause of the change vs the committed snapshot ({head}): transferred 1.00 -> 0.00 (regressed)" in out
    assert f"-{GOOD}" in out and f"+{WORSE}" in out and "regression_tolerance = 0.12" in out
    assert "--transfer-compare-to" not in out.split("cause of the change", 1)[1].split("scores on", 1)[0]
    result_record = json.loads((pytester.path / "report.json").read_text())["results"][0]
    assert "compare" not in result_record and result_record["snapshot_change"]["cause"]["accept_tolerance"] == 0.12
    assert f"**cause, vs the committed snapshot ({head})**" in (pytester.path / "report.md").read_text()


def test_a_short_reference_is_named_and_one_re_made_in_full_catches_the_regression(pytester: pytest.Pytester) -> None:
    """A reference written by a run that stopped early and kept no scores past its stop (as before references were
    kept in full) holds 3 of the 12 held-out tasks: a drop on every task cannot be shown on 3 at a look's level, and
    the gate and the comparison row say so. Re-made with --snapshot-update at the base, it holds every task (the pair
    stopped for futility at 3 tasks there too), the regression gate looks on with the transferred skill alone, and
    the same pull request fails."""
    from pytest_skilltransfer.plugin.snapshots import REFERENCE_LINE

    history(pytester, GOOD, WORSE)
    git(pytester.path, "checkout", "-q", "main")
    snapshot = pytester.path / SNAPSHOT
    full = snapshot.read_text()
    assert "stopped at look 1 of 4 (3 of 12 tasks): futile" in full and REFERENCE_LINE.search(full)
    snapshot.write_text(REFERENCE_LINE.sub("", full))
    git(pytester.path, "commit", "-qam", "a reference kept only to its stop")
    git(pytester.path, "checkout", "-q", "pr")
    result = pytester.runpytest_subprocess("--compare-to=main", "--skilltransfer-json=report.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        "regression against main (*): no regression; 1 compared on fewer tasks than the held-out set (a short "
        "reference at the ref)",
        "  seeds/router*::transfer[[]cover-a->cover-b[]]: 1.00 -> 0.00  ok (the snapshot at the ref holds 3 of 12 "
        "held-out tasks: a regression on the others cannot be seen; re-make it there with --snapshot-update)"])
    item = json.loads((pytester.path / "report.json").read_text())["results"][0]
    assert (item["compare"]["reference_tasks"], item["compare"]["of"]) == (3, 12)
    gate = next(g for g in item["gate"]["gates"] if g["gate"] == "regression_tolerance")
    assert "over 3 common task(s)" in gate["message"] and "holds 3 of the 12 held-out tasks" in gate["message"]
    git(pytester.path, "checkout", "-q", "main")
    pytester.runpytest_subprocess("--snapshot-update").assert_outcomes(passed=1)
    assert snapshot.read_text() == full  # the reference re-made in full
    git(pytester.path, "commit", "-qam", "the reference re-made in full")
    git(pytester.path, "checkout", "-q", "pr")
    result = pytester.runpytest_subprocess("--compare-to=main")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["  FAILED regression: transferred change -1.000 [[]-1.000, -0.110[]] over 9 common "
                                 "task(s) vs the snapshot at main (*)*", "regression against main (*): 1 regressed"])
