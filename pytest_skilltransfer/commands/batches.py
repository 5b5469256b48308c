"""`python -m pytest_skilltransfer batches`: what the batch manifest holds, and resolving a submission by hand.

    python -m pytest_skilltransfer batches [--cassette-dir DIR]                      uncollected submissions
    python -m pytest_skilltransfer batches adopt SUBMISSION BATCH_ID [--cassette-dir DIR]
    python -m pytest_skilltransfer batches abandon SUBMISSION [--cassette-dir DIR] [--force]

`adopt` names the provider batch an interrupted submission made (the next run collects it);
`abandon` says the provider has no such batch (the next run sends its requests again). Both are
needed only when a run could not look the submission up itself and said so. `abandon` looks the
submission up at the provider first (its batch id, or a batch created at its time with as many
requests) and refuses, naming `adopt`, when the batch exists or cannot be looked up: abandoning a
batch that exists pays for its requests twice. `--force` abandons without the look-up.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..models.batch.manifest import Manifest, ManifestError, Submission, pending_text


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_skilltransfer batches",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("action", nargs="?", choices=("list", "adopt", "abandon"), default="list")
    parser.add_argument("submission", nargs="?", help="the submission named by the error or the manifest")
    parser.add_argument("batch_id", nargs="?", help="adopt: the provider's batch id")
    parser.add_argument("--cassette-dir", default="cassettes", type=Path,
                        help="the cassette folder holding batch-manifest.jsonl (default: cassettes)")
    parser.add_argument("--force", action="store_true",
                        help="abandon: without looking the batch up at the provider first")
    args = parser.parse_args(argv)
    try:
        manifest = Manifest.open(args.cassette_dir)
    except ManifestError as exc:
        print(f"batches: {exc}")
        return 2
    if args.action == "list":
        print(pending_text(manifest) or f"{manifest.path}: no uncollected batch")
        return 0
    sub = manifest.submissions.get(args.submission or "")
    if sub is None:
        print(f"batches: {manifest.path} has no submission {args.submission!r}; `batches` lists the open ones")
        return 2
    if args.action == "adopt":
        if not args.batch_id:
            parser.error("adopt needs the provider's BATCH_ID")
        manifest.append({"event": "adopted", "submission": sub.submission, "batch_id": args.batch_id})
        print(f"{manifest.path}: submission {sub.submission} is batch {args.batch_id}; the next run collects it")
    else:
        refusal = None if args.force else _exists_at_provider(manifest, sub, args.cassette_dir)
        if refusal:
            print(f"batches: {refusal}")
            return 2
        manifest.append({"event": "abandoned", "submission": sub.submission})
        print(f"{manifest.path}: submission {sub.submission} abandoned; the next run sends its "
              f"{len(sub.custom_ids)} request(s) again")
    return 0


def _exists_at_provider(manifest: Manifest, sub: Submission, folder: Path) -> str | None:
    """Why `abandon` must not proceed (the batch exists at the provider, or the look-up failed), else None."""
    try:
        found = _look_up(manifest, sub)
    except Exception as exc:  # noqa: BLE001 - no key, the network, the provider: the look-up is not an answer
        return (f"submission {sub.submission} could not be looked up at the provider ({type(exc).__name__}: {exc}); "
                f"it may hold {len(sub.custom_ids)} request(s) already paid for. Abandon it only if you know the "
                "provider has no such batch: add --force")
    if found is None:
        return None
    return (f"submission {sub.submission} is batch {found} at the provider: abandoning it would send its "
            f"{len(sub.custom_ids)} request(s) again and pay for them twice. The next run collects it"
            + ("" if sub.batch_id == found else
               f" once the manifest names it: python -m pytest_skilltransfer batches adopt {sub.submission} {found} "
               f"--cassette-dir {folder}")
            + "; to abandon it anyway, add --force")


def _look_up(manifest: Manifest, sub: Submission) -> str | None:
    """The provider's batch of a submission: its recorded batch id if the provider still has it, else a batch
    created at its time with as many requests (as a run looks an interrupted create up); None when neither."""
    import os

    from ..models.batch import _api_for, _default, group_for
    from ..models.sdk_common import LOCAL_KEY
    from ..models.wire import key_variable, wire_names

    provider, _, rest = sub.group.partition(":")
    model_id, _, base_url = rest.partition("@")
    if provider not in wire_names():
        raise ValueError(f"unknown provider in the manifest's group {sub.group!r}")
    key = os.environ.get(key_variable(provider), "") or (LOCAL_KEY if base_url != _default(provider) else "")
    if not key:
        raise ValueError(f"{key_variable(provider)} is not set")
    api = _api_for(group_for(provider, base_url, model_id, key))
    if sub.batch_id:
        try:
            api.status(sub.batch_id)
        except Exception as exc:
            if getattr(exc, "status_code", None) == 404:
                return None
            raise
        return sub.batch_id
    claimed = {s.batch_id for s in manifest.submissions.values() if s.batch_id}
    return api.find(sub.submission, sub.at, len(sub.custom_ids), claimed)
