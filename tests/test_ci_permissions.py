"""Issue 42 item 15: the GitHub recipe declares ``checks: write`` for the JUnit check run it creates, and the GitLab
recipe shares the corpus cache seeded on the protected default branch with unprotected merge-request branches
(``cache:unprotect``), as docs/ci.md explains."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def test_github_workflow_grants_what_its_actions_need():
    wf = yaml.safe_load((REPO / ".github" / "workflows" / "harness-gate.yml").read_text("utf-8"))
    steps = [s for job in wf["jobs"].values() for s in job["steps"]]
    uses = {s.get("uses", "").split("@")[0] for s in steps}
    assert "mikepenz/action-junit-report" in uses  # creates a check run: needs checks: write
    assert "marocchino/sticky-pull-request-comment" in uses  # comments: needs pull-requests: write
    assert wf["permissions"] == {"contents": "read", "pull-requests": "write", "checks": "write"}


def test_gitlab_corpus_cache_is_one_for_protected_and_unprotected_branches():
    ci = yaml.safe_load((REPO / "ci" / "gitlab-harness-gate.yml").read_text("utf-8"))
    corpus = {
        job: [c for c in ci[job]["cache"] if c["key"] == "$HARNESS_CORPUS_CACHE"]
        for job in ("harness-seed-corpus", "harness-gate")
    }
    assert [c["policy"] for c in corpus["harness-seed-corpus"]] == ["push"]
    assert [c["policy"] for c in corpus["harness-gate"]] == ["pull"]
    assert all(c.get("unprotect") is True for cs in corpus.values() for c in cs)
    doc = " ".join((REPO / "docs" / "ci.md").read_text("utf-8").split())
    for needle in ("Use separate caches for protected branches", "`<key>-non_protected`", "`cache:unprotect: true`",
                   "`permissions: checks: write`"):  # fmt: skip
        assert needle in doc, needle
