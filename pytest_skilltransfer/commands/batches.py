"""`python -m pytest_skilltransfer batches`: what the batch manifest holds, and resolving a submission by hand.

    python -m pytest_skilltransfer batches [--cassette-dir DIR]                      uncollected submissions
    python -m pytest_skilltransfer batches adopt SUBMISSION BATCH_ID [--cassette-dir DIR]
    python -m pytest_skilltransfer batches abandon SUBMISSION [--cassette-dir DIR]

`adopt` names the provider batch an interrupted submission made (the next run collects it);
`abandon` says the provider has no such batch (the next run sends its requests again). Both are
needed only when a run could not look the submission up itself and said so.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..models.batch.manifest import Manifest, ManifestError, pending_text


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_skilltransfer batches",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("action", nargs="?", choices=("list", "adopt", "abandon"), default="list")
    parser.add_argument("submission", nargs="?", help="the submission named by the error or the manifest")
    parser.add_argument("batch_id", nargs="?", help="adopt: the provider's batch id")
    parser.add_argument("--cassette-dir", default="cassettes", type=Path,
                        help="the cassette folder holding batch-manifest.jsonl (default: cassettes)")
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
        manifest.append({"event": "abandoned", "submission": sub.submission})
        print(f"{manifest.path}: submission {sub.submission} abandoned; the next run sends its "
              f"{len(sub.custom_ids)} request(s) again")
    return 0
